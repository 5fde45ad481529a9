"""The reproduction's ``index.html``: which run produced the results, the summary, the figures.

The page always describes the run that produced what is in the output folder:
for each notebook, when its executed copy was produced, how long it took and
with which code; a rerun that found a notebook up to date says so instead of
pretending it ran.  Figures come in the order the notebooks save them, each
at a readable size with a caption (the notebook's own words, the series
drawn: published against ours) and a link to its section of the notebook.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import re
from pathlib import Path
from typing import Any

from labkit.report import figures as figs
from labkit.report import summary
from labkit.run.progress import format_seconds
from labkit.run.run_state import describe_code

esc = html.escape

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 72em; margin: 2em auto; padding: 0 1em;
       line-height: 1.45; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { padding: 0.25em 0.6em; text-align: left; border-bottom: 1px solid #ddd;
         vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; }
.status-failed, .status-interrupted, .status-output-error { color: #b00020; font-weight: bold; }
.status-up-to-date { color: #555; }
figure { margin: 2em 0; padding-bottom: 1em; border-bottom: 1px solid #eee; }
figure img { display: block; max-width: 100%; height: auto; }
figcaption { max-width: 60em; margin-top: 0.5em; }
figcaption .series { color: #444; font-size: 0.95em; }
figcaption .where { color: #666; font-size: 0.9em; }
.note { color: #555; }
"""


def _when(iso: str | None) -> str:
    if not iso:
        return "-"
    try:
        t = _dt.datetime.fromisoformat(iso)
    except ValueError:
        return iso
    return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _notebook_rows(rep: Any) -> str:
    rows = []
    for r in rep.runs:
        stem = Path(r.name).stem
        status = r.status
        detail = ""
        if r.status in ("failed", "output error", "interrupted"):
            detail = f"<br>{esc(r.describe_failure())}"
        elif r.status == "up to date":
            detail = "<br><span class='note'>not rerun: nothing it depends on changed</span>"
        page = rep.out / "html" / f"{stem}.html"
        name = (
            f"<a href='html/{esc(stem)}.html'>{esc(r.name)}</a>" if page.is_file() else esc(r.name)
        )
        rows.append(
            f"<tr><td>{name}</td><td><a href='notebooks/{esc(r.name)}'>ipynb</a></td>"
            f"<td class='status-{esc(status.replace(' ', '-'))}'>{esc(status)}{detail}</td>"
            f"<td>{esc(_when(r.finished))}</td>"
            f"<td class='num'>{esc(format_seconds(r.seconds))}</td>"
            f"<td>{esc(describe_code(r.code))}</td></tr>"
        )
    return (
        "<table><tr><th>notebook</th><th>executed</th><th>status</th><th>produced</th>"
        "<th>time</th><th>code</th></tr>\n" + "\n".join(rows) + "\n</table>"
    )


def _header(rep: Any) -> str:
    produced = [r for r in rep.runs if r.finished and r.status in ("ran", "up to date")]
    ran = [r for r in rep.runs if r.status == "ran"]
    fresh = [r for r in rep.runs if r.status == "up to date"]
    parts = []
    if produced:
        first = min(r.finished for r in produced)
        last = max(r.finished for r in produced)
        total = sum(r.seconds for r in produced)
        span = _when(last) if first == last else f"{_when(first)} to {_when(last)}"
        codes = sorted({describe_code(r.code) for r in produced})
        parts.append(
            f"The results on this page were produced on {esc(span)}: "
            f"{len(produced)} notebook(s), {esc(format_seconds(total))} of execution, "
            f"code {esc('; '.join(codes))}."
        )
    else:
        parts.append("No notebook has completed in this folder yet.")
    checked = _when(rep.finished)
    if fresh and not ran:
        parts.append(
            f"Checked again on {esc(checked)}: every notebook was up to date, nothing was rerun."
        )
    elif fresh:
        parts.append(
            f"Last run on {esc(checked)} ({esc(format_seconds(rep.seconds))}): "
            f"{len(ran)} notebook(s) ran, {len(fresh)} were up to date and kept."
        )
    else:
        parts.append(
            f"Last run on {esc(checked)} ({esc(format_seconds(rep.seconds))}): "
            f"{len(ran)} notebook(s) ran."
        )
    from labkit.report.summary import fingerprint  # where the verdicts hold

    parts.append(
        f"Every verdict holds for this host, {esc(fingerprint())}, in one session "
        "(<code>labkit reproduce --sessions N</code> pools several; <code>labkit compare</code>"
        " sets hosts side by side)."
    )
    bad = [r for r in rep.runs if r.status in ("failed", "output error", "interrupted")]
    if bad:
        parts.append(f"<strong>{len(bad)} notebook(s) did not complete: see below.</strong>")
    return "<p>" + " ".join(parts) + "</p>"


def _markdown(text: str) -> str:
    try:
        from nbconvert.filters.markdown import markdown2html  # the [lab] extra

        return markdown2html(text)
    except Exception:  # noqa: BLE001 - plain text is a fine caption too
        return f"<p>{esc(text)}</p>"


def whole_sentences(text: str) -> str:
    """A caption that ends with a whole sentence: notebook text that leads into a table or
    code (ending with ":") loses its last, unfinished sentence; a single such sentence ends
    with a full stop instead."""
    text = text.rstrip()
    if not text.endswith(":"):
        return text
    ends = [m.end() for m in re.finditer(r"[.!?](\*|_|`|\))*(?=\s)", text)]
    return text[: ends[-1]].rstrip() if ends else text[:-1].rstrip() + "."


def _figure(out: Path, saved: figs.SavedFigure | None, png: Path, anchors: dict) -> str:
    name = png.stem
    record = figs.read_sidecar(png)
    title = figs.title_text(record, name)
    caption = whole_sentences(record.get("caption") or (saved.after if saved else ""))
    series = figs.series_text(record)
    link = ""
    if saved is not None:
        stem = Path(saved.notebook).stem
        target = anchors.get(stem, {}).get(saved.section_cell_id or "") if saved.section else None
        href = f"html/{stem}.html#" + (target or f"cell-id={saved.cell_id}")
        where = f"section “{saved.section}”" if saved.section else "its cell"
        link = (
            f"<div class='where'>From <a href='{esc(href)}'>{esc(saved.notebook)}, "
            f"{esc(where)}</a>.</div>"
        )
    svg = png.with_suffix(".svg")
    target_file = svg.name if svg.is_file() else png.name
    return (
        f"<figure id='fig-{esc(name)}'>"
        f"<a href='figures/{esc(target_file)}'><img src='figures/{esc(png.name)}' "
        f"alt='{esc(title)}' loading='lazy'></a>"
        f"<figcaption><strong>{esc(title)}</strong> <code>{esc(name)}</code>"
        + (_markdown(caption) if caption else "")
        + (f"<div class='series'>Drawn: {esc(series)}.</div>" if series else "")
        + link
        + "</figcaption></figure>"
    )


def gallery(rep: Any) -> str:
    """Every figure of ``<out>/figures``, in notebook order, captioned and linked."""
    out = rep.out
    pngs = {
        p.stem: p for p in sorted((out / "figures").glob("*.png")) if not p.name.startswith(".")
    }
    ordered: list[tuple[figs.SavedFigure | None, Path]] = []
    anchors: dict[str, dict[str, str]] = {}
    for r in rep.runs:
        executed = out / "notebooks" / r.name
        try:
            nb = json.loads(executed.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        page = out / "html" / f"{Path(r.name).stem}.html"
        try:
            anchors[Path(r.name).stem] = figs.heading_anchors(page.read_text(encoding="utf-8"))
        except OSError:
            pass
        for saved in figs.find_saved(r.name, nb):
            if saved.name in pngs:
                ordered.append((saved, pngs.pop(saved.name)))
    ordered += [(None, p) for p in pngs.values()]  # saved by code the notebooks do not show
    if not ordered:
        return "<p>(no figures saved)</p>"
    return "\n".join(_figure(out, saved, png, anchors) for saved, png in ordered)


def index_html(rep: Any) -> str:
    """The whole page for a :class:`labkit.run.reproduce.Reproduction`."""
    mode = "quick" if rep.quick else "full"
    table = rep.summary.drop(columns=["recorded"], errors="ignore")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>labkit reproduction ({mode} mode)</title>
<style>{STYLE}{summary.SUMMARY_CSS}{summary.HEADLINE_CSS}</style></head><body>
<h1>labkit reproduction ({mode} mode)</h1>
{_header(rep)}
<p class="note">The notebooks tell each story; this page gathers their headline figures.
Published = the figure of the original mail; model = labkit's C model of the kernel code;
live = the running kernel.</p>
<h2>Summary</h2>
<p class="note">One row per claim; the interval's confidence is printed beside it, as
computed. Open "reason and method" in a row for why the verdict is what it is.</p>
{summary.summary_html(table, layout="headline")}
<h2>Notebooks</h2>
{_notebook_rows(rep)}
<h2>Figures</h2>
{gallery(rep)}
</body></html>
"""


__all__: list[str] = []  # internal: the index page of labkit reproduce (labkit.run.reproduce)

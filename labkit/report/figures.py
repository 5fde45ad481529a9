"""What a saved figure shows, in words: its sidecar record and its place in the notebooks.

:func:`labkit.report.savefig` writes ``<name>.json`` beside ``<name>.png``
with :func:`describe`: the caption the notebook gave (if any), the titles,
axis labels and legend entries of every axes.  :func:`find_saved` finds,
in executed notebooks, the cell that saved each figure, its section and the
markdown that follows it, so that the reproduction's index can show the
figures in the order the notebooks do, captioned and linked to their section.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: ``savefig(fig, "name"`` or ``claims.figure("name"`` (which saves it) in a cell's source.
SAVEFIG_CALL = re.compile(r"(?:savefig\(\s*[^,]+,|\bfigure\()\s*[\"']([A-Za-z0-9_-]+)[\"']")


def describe(fig: Any, caption: str | None = None) -> dict[str, Any]:
    """The sidecar record of a matplotlib figure (JSON-serialisable)."""
    axes = []
    for ax in fig.get_axes():
        handles, labels = ax.get_legend_handles_labels()
        legend = ax.get_legend()
        if legend is not None:
            labels = [t.get_text() for t in legend.get_texts()] or labels
        axes.append(
            {
                "title": ax.get_title() or "",
                "xlabel": ax.get_xlabel() or "",
                "ylabel": ax.get_ylabel() or "",
                "xscale": ax.get_xscale(),
                "yscale": ax.get_yscale(),
                "legend": [lab for lab in labels if lab and not lab.startswith("_")],
            }
        )
    suptitle = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else ""
    return {"caption": caption or "", "suptitle": suptitle, "axes": axes}


def read_sidecar(png: Path) -> dict[str, Any]:
    """The sidecar of ``<name>.png`` ({} if there is none or it is unreadable)."""
    try:
        data = json.loads(png.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass
class SavedFigure:
    """A figure saved by a notebook cell.

    Attributes:
        name: the figure's name (file stem).
        notebook: the notebook's file name.
        cell_id: the saving cell's id (the HTML page's anchor is ``cell-id=<id>``).
        section: the markdown heading of the section it is in.
        section_cell_id: the id of the markdown cell holding that heading.
        after: the first paragraph of the markdown cell after the figure's cell.
    """

    name: str
    notebook: str
    cell_id: str | None
    section: str | None
    section_cell_id: str | None
    after: str


def _text(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _first_paragraph(markdown: str) -> str:
    """The first paragraph that is not a heading; of a list, its first item."""
    paras = [p.strip() for p in re.split(r"\n\s*\n", markdown) if p.strip()]
    for p in paras:
        if p.startswith("#"):
            continue
        if re.match(r"[*+-] ", p):
            return re.split(r"\n[*+-] ", p)[0][2:].strip()
        return p
    return ""


def _plain_heading(line: str) -> str:
    """A markdown heading as plain text (no #, backticks or asterisks)."""
    return re.sub(r"[`*]", "", line.lstrip("# ")).strip()


def find_saved(notebook: str, nb: dict[str, Any]) -> list[SavedFigure]:
    """Every figure the cells of ``nb`` save, in cell order."""
    found: list[SavedFigure] = []
    section, section_id = None, None
    cells = nb.get("cells", [])
    for k, cell in enumerate(cells):
        text = _text(cell)
        if cell.get("cell_type") == "markdown":
            for line in text.splitlines():
                if line.lstrip().startswith("#"):
                    section, section_id = _plain_heading(line), cell.get("id")
                    break
            continue
        if cell.get("cell_type") != "code":
            continue
        names = SAVEFIG_CALL.findall(text)
        if not names:
            continue
        after = ""
        if k + 1 < len(cells) and cells[k + 1].get("cell_type") == "markdown":
            after = _first_paragraph(_text(cells[k + 1]))
        for name in names:
            if any(f.name == name for f in found):
                continue
            found.append(SavedFigure(name, notebook, cell.get("id"), section, section_id, after))
    return found


def heading_anchors(page: str) -> dict[str, str]:
    """For each cell id of an nbconvert HTML page, the id of its first heading."""
    anchors: dict[str, str] = {}
    current = None
    for m in re.finditer(r'id="cell-id=([^"]+)"|<h[1-6][^>]*\sid="([^"]+)"', page):
        if m.group(1):
            current = m.group(1)
        elif current is not None and current not in anchors:
            anchors[current] = m.group(2)
    return anchors


def series_text(record: dict[str, Any]) -> str:
    """The legend entries of a sidecar record, as "a; b; c" (empty if none)."""
    labels: list[str] = []
    for ax in record.get("axes", []):
        for lab in ax.get("legend", []):
            if lab not in labels:
                labels.append(lab)
    return "; ".join(labels)


def title_text(record: dict[str, Any], name: str) -> str:
    """The figure's title (suptitle, or the titles of its axes), else its name."""
    if record.get("suptitle"):
        return str(record["suptitle"])
    titles = [ax["title"] for ax in record.get("axes", []) if ax.get("title")]
    return " · ".join(titles) if titles else name


__all__: list[str] = []  # internal: saved figures of labkit.report.summary and reproduce

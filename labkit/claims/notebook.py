"""What a notebook calls besides ``run``: its start, its figures, its prose, its summary.

* :func:`figure`: a result's figure by name, drawn from this session and saved.

* :func:`start`: the mode (quick or full), the plotting style, a new session; in a
  notebook, a line saying the outputs below come from this run, not the stored run
  named under the title.
* :func:`markdown`: prose whose measured figures are rendered from this run's
  results, never typed: ``{R1.walk_tail_ns}`` is the claim's estimate with its
  interval, ``{R1.walk_tail_ns:,.0f}`` its estimate alone, formatted;
  ``{R1.walk_tail_ns.low}``, ``.high``, ``.runs``, ``.verdict`` the rest.
  Values computed elsewhere come in as keywords.
* :func:`summary`: run the claims a notebook shows and print their summary rows.
* :func:`save_results`: in full mode, write every table the session measured.
"""

from __future__ import annotations

import string
import sys
from collections.abc import Iterable
from typing import Any

from matplotlib.figure import Figure

from labkit import config
from labkit.claims.engine import Session, new_session, session
from labkit.claims.phrases import Phrase
from labkit.config import quick_mode
from labkit.measure import results
from labkit.measure.stats import Estimate
from labkit.report import summary
from labkit.report.plots import apply_style
from labkit.results.claim import Quoted
from labkit.results.registry import figures, ids


def figure(name: str, *, quick: bool | None = None) -> Figure:
    """Draw the figure ``name`` from the current session, save it, and return it.

    Raises:
        KeyError: for an unknown figure name (the message lists them).
    """
    known = figures()
    try:
        draw = known[name]
    except KeyError:
        raise KeyError(f"unknown figure {name!r}; known: {', '.join(known)}") from None
    fig = draw(session(quick))
    summary.savefig(fig, name)
    _let_ipython_draw()
    return fig


def _let_ipython_draw() -> None:
    """In a Jupyter kernel, IPython draws a Figure as an image only once matplotlib's inline
    backend has registered its formatter, which happens when the backend is first loaded (by
    pyplot); these figures are made without pyplot, so load it here.  Elsewhere (another
    backend, no kernel) the import changes nothing."""
    if "ipykernel" in sys.modules:
        import matplotlib_inline.backend_inline  # noqa: F401


def start(quick: bool | None = None) -> Session:
    """A notebook's first call: the mode (printed), the plotting style, a new session."""
    apply_style()
    s = new_session(quick_mode(quick))
    print(f"mode: {'quick' if s.quick else 'full'}")
    if "ipykernel" in sys.modules and not config.notebook_name():
        # a reader ran the notebook (not labkit reproduce): its outputs are this run's
        import datetime as _dt  # only in a notebook run by a reader

        from labkit.measure.envinfo import cpu_model  # (as above)

        now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        print(
            f"the outputs below are from this run ({cpu_model()}, started {now}), "
            "not the stored run named above"
        )
    return s


class Markdown(str):
    """Text that Jupyter shows as Markdown (no IPython needed to make it); the phrases it
    was filled with (:mod:`labkit.claims.phrases`) go in its output's metadata, under
    ``labkit.phrases``, each with the numbers it was chosen from."""

    phrases: tuple[dict[str, Any], ...] = ()

    def _repr_markdown_(self) -> str | tuple[str, dict[str, Any]]:
        if not self.phrases:
            return str(self)
        return str(self), {"labkit": {"phrases": list(self.phrases)}}


class _Result:
    """``R1`` in a template: its claims by short name (``R1.walk_tail_ns``)."""

    def __init__(self, result: str, s: Session):
        self.result, self.session = result, s

    def __getattr__(self, name: str) -> Quoted:
        return Quoted(self.session.run(f"{self.result}.{name}", record=False))


def markdown(template: str, **values: Any) -> Markdown:
    """``template`` with every ``{R<n>.<claim>...}`` and ``{name}`` field filled from this
    run: claims from the current session (run if need be), names from ``values`` (an
    Estimate among them is quoted as a claim is: ``{F}`` with its interval; a
    :class:`~labkit.claims.phrases.Phrase` is its words, and its record goes in the
    output's metadata).

    Raises:
        KeyError: for a field that is neither a claim nor a given value.
    """
    s = session()
    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    results_ = {f.split(".")[0] for f in fields if f[:1] == "R" and f.split(".")[0][1:].isdigit()}
    namespace = {r: _Result(r, s) for r in results_}
    quoted = {k: Quoted(v) if isinstance(v, Estimate) else v for k, v in values.items()}
    out = Markdown(template.format(**namespace, **quoted))
    used = [values[f] for f in fields if isinstance(values.get(f), Phrase)]
    out.phrases = tuple(p.record() for p in used)
    return out


def summary_of(claim_ids: Iterable[str] | str) -> str:
    """Run each claim (a result id such as "R1" means all of its claims) and return its rows
    of the summary table as text."""
    wanted = ids(claim_ids) if isinstance(claim_ids, str) else list(claim_ids)
    for cid in wanted:
        session().run(cid)
    table = summary.summary_table()
    return summary.format_summary(table[table["claim"].isin(wanted)])


def save_results() -> str:
    """In full mode, write every result table the session measured (with the environment
    record); in quick mode, nothing.  Returns what was done, in words."""
    s = session()
    if s.quick:
        return "quick mode: results not saved"
    frames, earlier = {}, []
    for m in s.measurements():
        name = m.experiment.results
        if m.why_not or not name:
            continue
        if m.note:  # the measuring phase of labkit reproduce saved these rows already
            earlier.append(m.experiment.id)
            continue
        frames.update(name(m.data) if callable(name) else {name: m.data})
    said = ""
    if frames or not earlier:
        said = str(results.save_all(frames))
        if not frames:
            said = "no result tables measured in this session: nothing saved"
    if earlier:
        kept = f"kept by the measuring phase of labkit reproduce: {', '.join(sorted(earlier))}"
        said = f"{said}; {kept}" if said else kept
    out = config.out_setting()  # under labkit reproduce: name its folder, not this machine's path
    return said.replace(str(out), "the reproduction's folder") if out is not None else said


__all__: list[str] = []  # internal: re-exported by labkit.claims

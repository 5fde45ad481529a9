"""The measuring phase of a reproduction: every experiment's runs interleaved, per session.

Measured back to back, the runs of one experiment share one stretch of the
host's speed state and the next experiment gets another.  :func:`interleave`
measures the runs of several experiments round-robin instead: run 1 of every
experiment, then run 2 of every experiment still measuring, and so on; the
sequential looks' extra runs (:class:`labkit.measure.sequential.Looks`: the
same rule and budget as :func:`~labkit.measure.sequential.until_decided`, on
each experiment's own measuring time) are interleaved the same way among the
experiments still undecided.

:func:`phase` is what ``labkit reproduce`` runs before its notebooks: every
timed experiment the claims' modules declare (the instruction counts under
callgrind have no clock, and are measured by their notebook), in sessions
``pause`` seconds apart, the rows told apart by ``session`` and the runs
numbered across sessions, written into ``<out>/measured/``
(:mod:`labkit.claims.stored`) for the notebooks' sessions to read; in full
mode also the experiments' result tables, once, into ``<out>/results/``.

With one session the looks add runs until each verdict is decided, as a
notebook alone does.  With several, each session takes a share of the first
runs (:func:`session_runs`) and no looks: the verdict is one analysis of the
interval pooled over sessions (the session as the top level,
:meth:`labkit.claims.engine.Measured.estimate`), and runs added to one session
because *its* interval looked undecided would not serve it; the time goes to
sessions instead.  :func:`default_sessions` says how many a reproduction takes.
"""

from __future__ import annotations

import datetime as _dt
import math
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from labkit.claims import stored
from labkit.claims.engine import Measured, Session
from labkit.measure import results
from labkit.measure.experiment import Params
from labkit.measure.sequential import Budget, Looks, Sequential
from labkit.measure.stats import DEFAULT_CONFIDENCE, RUN_COLUMN, SESSION_COLUMN
from labkit.results.claim import Experiment
from labkit.results.registry import RESULTS, get, ids

#: Pause between sessions (seconds) unless told otherwise.
DEFAULT_PAUSE_S = 30.0
#: Sessions of a full-mode reproduction unless told otherwise (quick mode: 1).
FULL_SESSIONS = 3


def default_sessions(quick: bool) -> int:
    """How many sessions ``labkit reproduce`` measures unless told: 1 in quick mode (a
    smoke test, under a minute), :data:`FULL_SESSIONS` in full mode.

    Three is the fewest that give the pooled interval more than one degree of freedom
    (with two, the pooled t has 1 df: 12.7 standard errors at 95%, and almost every verdict
    is *inconclusive*); with :func:`session_runs` sharing the first runs out, three
    sessions measure about what two sessions' first runs take, and the whole full
    reproduction was planned to stay under 8 minutes on a 2-core VM (README, "How long
    it takes").
    """
    return 1 if quick else FULL_SESSIONS


@dataclass
class Job:
    """One experiment's runs in an interleaved schedule.

    ``one_run()`` measures one independent run; ``looks`` decides how many
    (None: exactly ``runs``).
    """

    name: str
    one_run: Callable[[], pd.DataFrame]
    looks: Looks | None = None
    runs: int = 1
    seconds: float = 0.0  #: this job's own measuring time
    failed: str = ""  #: why its runs stopped with an error ("" if they did not)
    frames: list[pd.DataFrame] = field(default_factory=list)
    pending: list[pd.DataFrame] = field(default_factory=list)

    def wanted(self) -> int:
        """Runs still wanted before the next look (or in all, without looks); 0: done."""
        if self.failed:
            return 0
        if self.looks is not None:
            return self.looks.want - len(self.pending)
        return self.runs - len(self.frames)

    def take(self, rows: pd.DataFrame) -> None:
        """Add one run's rows; a look is made once the runs it needs are in."""
        if self.looks is None:
            self.frames.append(rows.assign(**{RUN_COLUMN: len(self.frames)}))
            return
        self.pending.append(rows.assign(**{RUN_COLUMN: len(self.pending)}))
        if len(self.pending) == self.looks.want:
            batch, self.pending = pd.concat(self.pending, ignore_index=True), []
            self.looks.add(batch, self.seconds)

    def data(self) -> pd.DataFrame:
        """Every row measured, runs numbered 0, 1, 2, ..."""
        if self.looks is not None:
            return pd.concat(self.looks.frames, ignore_index=True)
        return pd.concat(self.frames, ignore_index=True)

    def sequential(self) -> Sequential | None:
        """The looks' outcome (None without looks)."""
        return None if self.looks is None else self.looks.result(self.seconds)


def interleave(
    jobs: list[Job],
    *,
    clock: Callable[[], float] = time.monotonic,
    on_run: Callable[[int, Job], None] | None = None,
) -> list[Job]:
    """Measure the jobs' runs round-robin (see the module) until every job is done.

    ``on_run(round, job)`` is called before each run (progress).  Returns ``jobs``.
    """
    rnd = 0
    while True:
        active = [j for j in jobs if j.wanted() > 0]
        if not active:
            return jobs
        for job in active:
            if on_run is not None:
                on_run(rnd, job)
            t0 = clock()
            try:
                rows = job.one_run()
            except Exception as exc:  # noqa: BLE001 - one experiment's failure stops only it
                job.failed = failure_text(exc)
                continue
            finally:
                job.seconds += clock() - t0
            job.take(rows)
        rnd += 1


def failure_text(exc: BaseException) -> str:
    """An experiment's failure in one line: the exception's type and first line."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def experiments() -> list[Experiment]:
    """Every experiment the results declare, each once, in declaration order."""
    seen: dict[str, Experiment] = {}
    for result in RESULTS:
        for exp in result.experiments:
            seen.setdefault(exp.id, exp)
    return list(seen.values())


def timed(exp: Experiment) -> bool:
    """True for an experiment that times something (not an instruction count: callgrind's,
    or the kernel bench's committed guest instructions, ``kernelvm.*``)."""
    return "callgrind" not in exp.id and not exp.id.startswith("kernelvm.")


def session_runs(budget: Budget, sessions: int) -> int:
    """Runs of one session when a reproduction measures ``sessions`` of them.

    One session: the budget's first runs (its looks may add more).  Several: the
    first runs shared out, ``ceil(2 * min_runs / sessions)`` but at least 2 (an
    interval over a session's runs needs two) and at most ``min_runs``: N sessions then
    measure about as many runs as two sessions' first runs, so the reproduction's
    measuring time stays about the same as N grows (only the pauses add), and the time
    goes to sessions, the level a verdict over sessions needs most.
    """
    if int(sessions) <= 1 or budget.min_runs <= 2:
        return budget.min_runs
    return min(budget.min_runs, max(2, math.ceil(2 * budget.min_runs / int(sessions))))


def job_of(exp: Experiment, params: Params, quick: bool, *, sessions: int = 1) -> Job:
    """The :class:`Job` of ``exp`` with ``params`` in a reproduction of ``sessions``
    sessions: with one, its budget's first runs, then more as its deciding claim's looks
    ask (as :meth:`labkit.claims.engine.Session.measure` would); with several,
    :func:`session_runs` runs and no looks."""
    budget = exp.budget(quick)

    def one_run() -> pd.DataFrame:
        return exp.measure(params, 1)

    if exp.decided_by is None or int(sessions) > 1:
        return Job(exp.id, one_run, None, session_runs(budget, sessions))
    judge = get(exp.decided_by)
    band = judge.band()
    if band is None:
        raise ValueError(f"{exp.id}: its deciding claim {judge.id} has no band")
    return Job(exp.id, one_run, Looks(judge.estimate, band, **budget.kwargs()))


def measure_session(
    session: Session,
    plan: Iterable[tuple[Experiment, Params]],
    *,
    sessions: int = 1,
    first: bool = True,
    on_run: Callable[[int, Job], None] | None = None,
    failed: dict[tuple[str, str], str] | None = None,
) -> list[Measured]:
    """Measure ``plan`` (:meth:`Session.plan`'s pairs) interleaved, into ``session``, one
    of ``sessions`` (:func:`job_of`).  An experiment of one run (a sweep drawn as a
    figure, judged by no claim) is measured in the ``first`` session only.  An
    experiment whose run raises is left out, its cause put in ``failed`` (by experiment
    id and parameters key); the others go on."""
    pairs, jobs = [], []
    for exp, p in plan:
        why = exp.unavailable(p) if exp.unavailable is not None else ""
        if why or (not first and exp.budget(session.quick).max_runs == 1):
            continue  # the notebook's session says why, as it always did
        pairs.append((exp, p))
        jobs.append(job_of(exp, p, session.quick, sessions=sessions))
    interleave(jobs, on_run=on_run)
    out = []
    for (exp, p), job in zip(pairs, jobs, strict=True):
        if job.failed:
            if failed is not None:
                failed.setdefault((exp.id, p.key()), job.failed)
            continue
        seq = job.sequential()
        data = job.data().assign(**{SESSION_COLUMN: session.name})
        conf = DEFAULT_CONFIDENCE if seq is None else seq.confidence
        m = Measured(exp, p, data, conf, seq, seconds=job.seconds)
        session.put(m)
        out.append(m)
    return out


def _combine(
    per_session: list[list[Measured]],
) -> list[tuple[str, str, pd.DataFrame, float, str, float]]:
    """One entry per experiment: its rows of every session, runs numbered across them, and
    the seconds its runs took in all (NaN when a session's are not known)."""
    by_key: dict[tuple[str, str], list[Measured]] = {}
    for ms in per_session:
        for m in ms:
            by_key.setdefault((m.experiment.id, m.params.key()), []).append(m)
    entries = []
    for (exp_id, key), ms in by_key.items():
        frames, offset, notes = [], 0, []
        for k, m in enumerate(ms, start=1):
            frames.append(m.data.assign(**{RUN_COLUMN: m.data[RUN_COLUMN] + offset}))
            offset += int(m.data[RUN_COLUMN].max()) + 1
            notes.append(m.stopped() if len(ms) == 1 else f"session {k}: {m.stopped()}")
        mixed = " (runs interleaved with the other experiments)" if len(by_key) > 1 else ""
        note = "; ".join(notes) + mixed
        data = pd.concat(frames, ignore_index=True)
        seconds = float(sum(m.seconds for m in ms))
        entries.append((exp_id, key, data, ms[0].confidence, note, seconds))
    return entries


def _say(text: str) -> None:
    """A progress line, bracketed as labkit reproduce's notebook lines are."""
    print(f"[measuring] {text}", file=sys.stderr, flush=True)


def phase(
    out: str | Path,
    quick: bool,
    *,
    sessions: int | None = None,
    pause: float = DEFAULT_PAUSE_S,
    plan: list[tuple[Experiment, Params]] | None = None,
    progress: bool = True,
    sleep: Callable[[float], None] = time.sleep,
) -> Path:
    """The measuring phase of a reproduction into ``out`` (see the module); returns
    ``<out>/measured``.

    ``sessions`` defaults to :func:`default_sessions`; ``plan`` to every timed
    experiment with its parameters for the mode.

    An experiment whose runs fail is recorded as failed, with its cause (a notebook
    reading it shows the failure); the others are measured as usual.

    Raises:
        ValueError: for fewer than 1 session or a negative pause.
        OSError: when the rows cannot be written.
    """
    sessions = default_sessions(quick) if sessions is None else int(sessions)
    if sessions < 1:
        raise ValueError(f"sessions must be 1 or more, got {sessions}")
    if not pause >= 0:
        raise ValueError(f"pause must be >= 0 seconds, got {pause}")
    if plan is None:
        plan = [(e, e.params.for_mode(quick)) for e in experiments() if timed(e)]
    stored.clear(out)
    names, per_session = [], []
    failed: dict[tuple[str, str], str] = {}
    t0 = time.monotonic()
    for k in range(1, int(sessions) + 1):
        if k > 1:
            if progress:
                _say(f"pause of {pause:g} s before session {k} of {sessions}")
            sleep(pause)
        now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        s = Session(quick, name=f"{k:02d}-{now}")
        names.append(s.name)

        def show(rnd: int, job: Job, k: int = k) -> None:
            if progress:
                _say(f"session {k} of {sessions}, round {rnd + 1}: {job.name}")

        per_session.append(
            measure_session(
                s, plan, sessions=int(sessions), first=k == 1, on_run=show, failed=failed
            )
        )
    for (exp_id, _), cause in failed.items() if progress else ():
        _say(f"{exp_id} failed: {cause}")
    if progress:
        _say(f"measured {len(plan)} experiments in {sessions} session(s), "
             f"{time.monotonic() - t0:.0f} s")  # fmt: skip
    entries = [e for e in _combine(per_session) if (e[0], e[1]) not in failed]
    where = stored.write(out, quick, names, entries, failed=failed)
    if not quick:  # the result tables, once (the notebooks' save_results skips these rows)
        results.save_all(_result_frames(entries), data_dir=out)
    return where


def _result_frames(
    entries: list[tuple[str, str, pd.DataFrame, float, str, float]],
) -> dict[str, pd.DataFrame | None]:
    """The result tables of the measured experiments, by name (their ``results``), from
    :func:`_combine`'s entries."""
    by_id = {e.id: e for e in experiments()}
    frames: dict[str, pd.DataFrame | None] = {}
    for exp_id, _, data, *_ in entries:
        name = by_id[exp_id].results if exp_id in by_id else ""
        if name:
            frames.update(name(data) if callable(name) else {name: data})
    return frames


def session_summaries(out: str | Path, quick: bool) -> dict[str, pd.DataFrame]:
    """Each session of a reproduction's measuring phase judged on its own, and all of them
    pooled: ``{session name: table, ..., "pooled": table}``, tables shaped as a summary
    (``claim``, ``result``, ``quantity``, ``estimate``, ``ci_low``, ``ci_high``,
    ``n_runs``, ``verdict``) for :func:`labkit.report.stability.compare`.

    Only the claims whose experiment the phase measured (the instruction counts are not);
    each by the summary's rule (:func:`labkit.report.summary.judge_row`), against its band.
    Empty when ``out`` holds no measuring phase of this mode.
    """
    from labkit.report.summary import judge_row  # only here, as ids

    rows: dict[str, list[dict[str, object]]] = {}
    for cid in ids():
        claim = get(cid)
        exp = claim.experiment
        st = stored.load(exp.id, exp.params.for_mode(quick).key(), quick, out=out)
        band = claim.band()
        if st is None or band is None:
            continue
        m = Measured(exp, exp.params.for_mode(quick), st.data, st.confidence, None)
        parts = [(str(k), d) for k, d in st.data.groupby(SESSION_COLUMN, sort=True)]
        if len(parts) > 1:
            parts.append(("pooled", st.data))
        for name, d in parts:
            one = Measured(m.experiment, m.params, d, m.confidence, None)
            est = one.estimate(claim)
            if est is None:
                continue
            v, extra = judge_row(cid, est, band, quick=quick)
            rows.setdefault(name, []).append(
                {"claim": cid, "result": claim.result, "quantity": claim.label}
                | {"estimate": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high}
                | {"n_runs": est.n_runs, "verdict": v.verdict, "scope": extra["scope"]}
            )
    return {k: pd.DataFrame(v) for k, v in rows.items()}


# phase: labkit reproduce (cli.py) and make reference; session_summaries:
# benchmarks/verdict_stability.py; the rest is used by tests/test_schedule.py only
__all__ = ["phase", "session_summaries"]

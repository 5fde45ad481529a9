"""The claims: every headline quantity of R1, R2 and R3 as one declared ``Claim``, and the
one engine that measures, decides and records it.

A claim has a short stable id (``"R2.saved_share"``) that keys its result's
``bands.csv`` (its declared tolerance band), the summary row and the figures::

    from labkit import claims
    out = claims.run("R2.saved_share")   # measured in worker processes, decided, recorded
    print(out)                           # R2.saved_share: 2.9 [2.6, 3.2] % -> reproduced
    claims.figure("R2-R3-live-ab")       # drawn from what the session measured, saved

:mod:`labkit.results.claim` says what a claim and an experiment declare, each
result's folder (:mod:`labkit.results`) declares its own, and
:mod:`labkit.results.registry` lists the results; :mod:`labkit.claims.engine` says how a
claim is run.  A new claim is one :class:`Claim` in its result's ``claims.py`` and one row
of that result's ``bands.csv`` (and of its ``evidence.csv``).
"""

from labkit.claims.engine import Measured, Outcome, Session, new_session, run, session
from labkit.claims.notebook import figure, markdown, save_results, start, summary_of
from labkit.results.claim import Claim, Experiment
from labkit.results.registry import get, ids, register

__all__ = [
    "Claim",
    "Experiment",
    "Measured",
    "Outcome",
    "Session",
    "figure",
    "get",
    "ids",
    "markdown",
    "new_session",
    "register",
    "run",
    "save_results",
    "session",
    "start",
    "summary_of",
]

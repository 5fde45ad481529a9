"""The claims: every headline quantity of R1, R2 and R3 as one declared ``Claim``, and the
one engine that measures, decides and records it.

A claim has a short stable id (``"R2.saved_share"``) that keys
``data/published/bands.csv`` (its declared tolerance band), the summary row and
the figures::

    from labkit import claims
    out = claims.run("R2.saved_share")   # measured in worker processes, decided, recorded
    print(out)                           # R2.saved_share: 2.9 [2.6, 3.2] % -> reproduced
    claims.figure("R2-R3-live-ab")       # drawn from what the session measured, saved

:mod:`labkit.claims.claim` says what a claim and an experiment declare,
:mod:`labkit.claims.engine` how a claim is run; :mod:`labkit.claims.r1`,
:mod:`~labkit.claims.r2` and :mod:`~labkit.claims.r3` declare the claims of each
result.  A new claim is one :class:`Claim` in its result's module and one row of
``bands.csv``.
"""

# each of these registers its claims or its figures
from labkit.claims import figures_live, figures_ubuf, r1, r2, r3  # noqa: F401
from labkit.claims.claim import Claim, Experiment, get, ids, register
from labkit.claims.engine import Measured, Outcome, Session, new_session, run, session
from labkit.claims.figures import figure
from labkit.claims.notebook import markdown, save_results, start, summary_of

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

"""Reporting: headline figures and their verdicts, plots, saved figures, ``labkit reproduce``.

The summary API (:mod:`labkit.report.summary`, with the verdict rule of
:mod:`labkit.measure.verdicts`) is re-exported here, so a notebook writes
``from labkit import report; report.record(...)``.
"""

from labkit.report import summary
from labkit.report.summary import *  # noqa: F403 (re-exports summary.__all__)

__all__ = list(summary.__all__)

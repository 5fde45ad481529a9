"""The composition root: the run (:mod:`labkit.run`) wired to the claims' measuring phase.

The run cannot import the claims (they sit above it), so the phase that measures every
timed experiment first (:func:`labkit.claims.schedule.phase`) is handed to it here, and
only here.  ``labkit reproduce`` (:mod:`labkit.cli`) and ``make reference`` both come
through this module::

    python -m labkit.compose reference [--quick]   # the full reproduction, stored
    python -m labkit.compose gallery [BUNDLE]      # copy a bundle into data/gallery/
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from labkit.claims import schedule
from labkit.report import bundle
from labkit.run import reference, reproduce

#: The bundle ``make gallery`` copies: the last full reproduction's.
LAST_FULL_BUNDLE = "reproduction/full/bundle"


def reproduce_from_args(args: argparse.Namespace) -> int:
    """``labkit reproduce``: the notebooks run after the measuring phase."""
    return reproduce.from_args(args, measure=schedule.phase)


def store_reference(argv: Sequence[str] | None = None) -> int:
    """``make reference``: the full reproduction, measured first, stored as the reference."""
    return reference.main(argv, measure=schedule.phase)


def add_to_gallery(path: str = LAST_FULL_BUNDLE) -> int:
    """``make gallery``: copy the bundle at ``path`` into the gallery; print where it went."""
    print(bundle.add_to_gallery(path))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m labkit.compose reference|gallery ...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["reference"]:
        return store_reference(args[1:])
    if args[:1] == ["gallery"] and len(args) <= 2:
        return add_to_gallery(*args[1:])
    print("usage: python -m labkit.compose reference [--quick] | gallery [BUNDLE]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["add_to_gallery", "main", "reproduce_from_args", "store_reference"]

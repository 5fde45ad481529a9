"""pytest settings for the whole suite: under pytest-xdist, the slowest files first.

``make test`` runs the tests in two worker processes, a file at a time (``--dist loadfile``);
tests/slow_first.py says why the order matters and which files go first.  Collection runs in
the workers, so the order is set there; a run in one process keeps pytest's order.
"""

from __future__ import annotations

import pytest
import slow_first


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker, sort the items by file rank (stable: each file stays whole)."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: slow_first.rank(item.path))

"""R1: its claims, experiments and figures (listed in :mod:`labkit.results.registry`)."""

"""The results labkit reproduces, one folder each, on the shared engine (:mod:`labkit.claims`).

Each folder (``r1/``, ``r2/``, ``r3/``) holds everything that is its result's: its claims
(``claims.py``: id, label, unit, estimate, band key, setup, the original's interval), the
experiments that measure them (``experiments.py``), its figures and the text its notebook
quotes (``figures.py``).  :mod:`labkit.results.registry` lists the results; nothing is
registered by importing a module.  :mod:`labkit.results.claim` says what a declaration holds.
"""

"""The run: ``labkit reproduce``'s orchestration.

:mod:`labkit.run.reproduce` executes every notebook in order (two side by side where they
allow it, :mod:`~labkit.run.lanes`), each in its own kernel (:mod:`~labkit.run.notebook_exec`),
skipping a notebook whose inputs did not change (:mod:`~labkit.run.run_state`), with a
progress line (:mod:`~labkit.run.progress`); it says what the run did
(:mod:`~labkit.run.outcome`) and writes its index page (:mod:`~labkit.run.index_page`).  What a
reader sees of a run (its summary, figures, bundle) is :mod:`labkit.report`.
"""

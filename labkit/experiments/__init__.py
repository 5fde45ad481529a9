"""One module per result: what each notebook runs (plans, runners, analysis helpers)."""

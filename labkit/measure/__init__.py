"""Measuring: the runner (pinning, warm-up, interleaving), statistics, C timers,
the environment record and result files."""

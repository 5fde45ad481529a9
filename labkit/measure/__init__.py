"""Measuring: the runner (pinning, warm-up, interleaving), runs in single-threaded worker
processes, statistics, sequential stopping, the verdict and the ledgers it reads, C timers,
the environment record and result files."""

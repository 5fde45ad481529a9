"""Cost models of published kernel changes, built on the core (R2/R3: the ITER_UBUF import)."""

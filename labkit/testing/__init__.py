"""Harnesses that check labkit against independent references (as :mod:`numpy.testing`).

The test suite and ``benchmarks/`` share these; none is imported by the rest of
labkit, and importing this package imports none of them (nor pytest).

- :mod:`labkit.testing.oracle`: a pure-Python oracle of the kernel's iov_iter
  position rules (the property tests compare the C core with it);
- :mod:`labkit.testing.kernel_diff`: labkit against the running kernel's
  system calls over the same real memory (the differential test, and
  ``benchmarks/kernel_differential.py`` at length);
- drivers run in a child process, so that a crash fails a test instead of
  killing it: ``python -m labkit.testing.fuzz_driver`` (seeded random
  operations, guard regions; ``benchmarks/fuzz.py`` at length),
  ``python -m labkit.testing.bad_input_driver`` (hostile arguments; needs
  hypothesis, from ``pip install 'labkit[test]'``) and
  ``python -m labkit.testing.iter_threads_driver`` (threads on one iterator).
"""

"""The model: user memory, the iterator types, imports from user space, registered buffers,
the page cache and folio queues (the memory of ITER_XARRAY and ITER_FOLIOQ).

Nothing here measures time; see :mod:`labkit.measure` and :mod:`labkit.experiments`.
"""

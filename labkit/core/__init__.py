"""The model: user memory, the iterator types, imports from user space, registered buffers.

Nothing here measures time; see :mod:`labkit.measure` and :mod:`labkit.experiments`.
"""

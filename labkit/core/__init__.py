"""labkit's core model: the iterator types and the memory they walk."""

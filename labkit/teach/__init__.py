"""Teaching aids: drawings of iterators and registered-buffer seeks, and exercises."""

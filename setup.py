"""labkit's C core is built by cffi at install time; metadata is in pyproject.toml."""

from setuptools import setup

setup(cffi_modules=["labkit/_build.py:ffibuilder"])

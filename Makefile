# labkit: the two commands of the README.
#   make reproduce   install labkit in .venv and run the reproduction
#   make test        install labkit with its test extra in .venv and run every test
# QUICK=1 shrinks sizes and repeats (LABKIT_QUICK=1), as CI does.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: reproduce test install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e .

install-test: $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'

reproduce: install
	$(BIN)/labkit reproduce $(if $(QUICK),--quick,)

test: install-test
	$(BIN)/python -m pytest

clean:
	rm -rf build labkit/_labkit*.so labkit/_labkit.c *.egg-info

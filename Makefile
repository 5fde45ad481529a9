# labkit: the two commands of the README.
#   make reproduce   install labkit with its lab extra in .venv and run the reproduction
#   make test        install labkit with its lab and test extras in .venv and run every test
#   make test-fast   the same, without the tests marked slow (at most 90 s)
# QUICK=1 shrinks sizes and repeats (LABKIT_QUICK=1), as CI does.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# what an editable install compiles or reads: reinstall only when one of these changes
BUILD_INPUTS := pyproject.toml setup.py labkit/_build.py \
	$(wildcard labkit/csrc/*.h labkit/csrc/*/*.c labkit/csrc/*/*.h labkit/csrc/*/*.cdef)
# setuptools' note on every editable install ("be careful with folders in your working
# directory with the same name as your package") is silenced: it is printed whatever the
# folder, and the one case it is about (Python started in the folder that contains a clone
# named labkit) is in the README, under Troubleshooting.
QUIET_PIP := PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install -q

.PHONY: reproduce reference test test-fast install install-test clean gallery kernel-oracle kernel-vm

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python $(BUILD_INPUTS)
	$(QUIET_PIP) -e '.[lab]'
	touch $@

$(VENV)/.installed-test: $(BIN)/python $(BUILD_INPUTS)
	$(QUIET_PIP) -e '.[lab,test]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

reproduce: install
	$(BIN)/labkit reproduce $(if $(QUICK),--quick,)

# the full reproduction, stored as the notebooks' outputs and data/reproduction (run it on a
# quiet machine; labkit.run.reference says what it writes; labkit.compose hands it the
# measuring phase, labkit.claims.schedule, which runs first)
reference: install
	$(BIN)/python -m labkit.compose reference $(if $(QUICK),--quick,)

# copy the bundle of the last full reproduction (reproduction/full/bundle) into data/gallery/
gallery: install
	$(BIN)/python -m labkit.compose gallery

# the tests run in TEST_JOBS processes (pytest-xdist), each test file and each notebook whole
# in one of them (--dist loadfile: module fixtures are built once, a notebook's cells share
# one kernel), the slowest files first (tests/conftest.py orders them); TEST_JOBS=0 runs
# them in this one process
TEST_JOBS ?= 2
test: install-test
	$(BIN)/python -m pytest $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder)

# the tests not marked slow (no builds, Jupyter kernels, browser or worker-heavy files):
# a minute or so, for the edit-test loop; make test still runs everything
test-fast: install-test
	$(BIN)/python -m pytest -m "not slow" $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder)

clean:
	rm -rf build labkit/_labkit*.so labkit/_labkit.c *.egg-info $(VENV)/.installed $(VENV)/.installed-test

# the kernel-source oracle: the real lib/iov_iter.c of 6.1, 6.1+ubuf and 6.12,
# built with each tree's own kbuild and cached (labkit.kernelsrc.INSTALL_HINT says what it needs)
kernel-oracle: install
	$(BIN)/labkit kernel build

# the kernel bench: x86-64 kernels of each era under QEMU TCG, counted per call, the whole
# matrix with attribution (labkit.kernelvm.INSTALL_HINT says what it needs); OUT= the folder
kernel-vm: install
	$(BIN)/python benchmarks/kernel_vm_matrix.py --out $(or $(OUT),kernel-vm-out)

"""pytest (nbval) settings for the stored notebooks.

The notebooks are stored executed in quick mode, so nbval reruns them in quick mode:
LABKIT_QUICK defaults to 1 for the test session (an explicit LABKIT_QUICK=0 is kept).
What the notebooks record with labkit.report (summary rows, figures) goes to a temporary
directory (LABKIT_OUT), not into data/results of the checkout.  The kernels nbval starts
inherit this environment.
"""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("LABKIT_QUICK", "1")
if "LABKIT_OUT" not in os.environ:
    _out = tempfile.mkdtemp(prefix="labkit-nbval-")
    os.environ["LABKIT_OUT"] = _out
    atexit.register(shutil.rmtree, _out, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """Every stored notebook is a slow test (a Jupyter kernel, every cell): make test-fast
    leaves them out."""
    import pytest  # only where pytest runs the notebooks

    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)

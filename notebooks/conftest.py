"""pytest (nbval) settings for the stored notebooks.

The notebooks are stored executed in quick mode, so nbval reruns them in quick mode:
LABKIT_QUICK defaults to 1 for the test session (an explicit LABKIT_QUICK=0 is kept).
The kernels nbval starts inherit this environment.
"""

import os

os.environ.setdefault("LABKIT_QUICK", "1")

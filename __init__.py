"""The root of a labkit clone: not the labkit package (that is the ``labkit/`` folder inside).

Python reaches this file only when it runs from the folder that *contains* a
clone named ``labkit`` (``~/src`` for a clone at ``~/src/labkit``): the current
folder comes first on ``sys.path``, so ``import labkit`` finds the clone's root.
Without this file Python would import that root as an empty namespace package
and fail later with ``module 'labkit' has no attribute 'UserMemory'``.

So: if another labkit can be imported (installed, or this clone installed in
editable mode), it is imported in place of this file, as if Python had been
started elsewhere; otherwise ImportError says what happened and what to do.
"""

import os as _os
import sys as _sys

_ROOT = _os.path.dirname(_os.path.abspath(__file__))
_PARENT = _os.path.dirname(_ROOT)


def _other_labkit():
    """The spec of a labkit that is not this clone's root, or None."""
    from importlib.machinery import PathFinder

    def usable(spec):
        origin = getattr(spec, "origin", None)
        return (
            spec is not None and origin and _os.path.abspath(origin) != _os.path.abspath(__file__)
        )

    path = [p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _PARENT]
    spec = PathFinder.find_spec("labkit", path)
    if usable(spec):
        return spec
    for finder in _sys.meta_path:  # e.g. the finder of an editable install
        if finder is PathFinder or not hasattr(finder, "find_spec"):
            continue
        try:
            spec = finder.find_spec("labkit", None)
        except Exception:  # noqa: BLE001 - a finder that cannot answer is no answer
            continue
        if usable(spec):
            return spec
    return None


def _load_instead():
    import importlib.util

    spec = _other_labkit()
    if spec is None:
        raise ImportError(
            f"'import labkit' found {_ROOT}, the root of a labkit clone, because Python runs "
            f"from {_PARENT}, the folder that contains the clone; the package is "
            f"{_os.path.join(_ROOT, 'labkit')}. Run Python from inside the clone "
            f"(cd {_os.path.basename(_ROOT)}), or install it (pip install -e "
            f"{_os.path.relpath(_ROOT)}) and run it from anywhere.",
            name="labkit",
        )
    module = importlib.util.module_from_spec(spec)
    _sys.modules["labkit"] = module  # the import statement returns what is here at the end
    spec.loader.exec_module(module)


if __name__ == "labkit":
    _load_instead()

"""The optional "lab" extra: what the notebooks and ``labkit reproduce`` need beyond labkit.

``pip install labkit`` gives the model, the live kernel and the measurements;
``pip install 'labkit[lab]'`` adds JupyterLab, papermill, nbconvert and
ipywidgets (pyproject.toml).  :func:`require_lab` is the one check, with the
one message, for code that runs notebooks.
"""

from __future__ import annotations

import importlib.util

#: The modules running a notebook headless imports (each from a package of the extra).
LAB_MODULES = ("papermill", "nbclient", "nbformat", "nbconvert", "jupyter_client", "ipykernel")

INSTALL_LAB = "pip install 'labkit[lab]'"


class MissingExtraError(ImportError):
    """A part of labkit that needs the "lab" extra was used without it."""


def missing_lab_modules() -> list[str]:
    """The modules of :data:`LAB_MODULES` that cannot be imported here (none when installed)."""
    return [name for name in LAB_MODULES if importlib.util.find_spec(name) is None]


def require_lab(what: str) -> None:
    """Raise :class:`MissingExtraError` naming the install command if the extra is missing.

    ``what`` names the feature in the message (for example ``"labkit reproduce"``).
    """
    missing = missing_lab_modules()
    if missing:
        raise MissingExtraError(
            f"{what} runs the notebooks, which needs the lab extra "
            f"(missing: {', '.join(missing)}): {INSTALL_LAB}"
        )

"""labkit's build: the C core by cffi, and what the wheel and sdist carry besides the package.

Metadata is in pyproject.toml.  What labkit ships besides the package (the
notebooks, the seed mails, the reference results) is listed once, in
``labkit.config.RESOURCES``: ``build_py`` copies those files into the built
package under ``labkit/_resources/`` (see :func:`labkit.config.resource`), so
that an installed labkit can reproduce without a clone, and ``sdist`` adds
them to the source archive.  The clone keeps them where they are
(``notebooks/``, ``data/``); an editable install reads them there.  Each
result's ledgers (``labkit/results/rN/*.csv``) are package data
(pyproject.toml), in the package already.
"""

import importlib.util
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent


def _config():
    """labkit/config.py, loaded from its file (labkit itself is not built yet)."""
    spec = importlib.util.spec_from_file_location("_labkit_config", HERE / "labkit" / "config.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


CONFIG = _config()


def resource_files():
    """(source, path relative to the clone) of every file labkit ships."""
    for res in CONFIG.RESOURCES.values():
        for pattern in res.patterns:
            for src in sorted((HERE / res.path).glob(pattern)):
                if src.is_file() and not src.name.startswith("."):
                    yield src, src.relative_to(HERE)


class BuildPyWithResources(build_py):
    """build_py, plus the notebooks and data files under labkit/_resources/."""

    def _target(self):
        return Path(self.build_lib) / "labkit" / CONFIG.SHIPPED

    def run(self):
        super().run()
        for src, rel in resource_files():
            dest = self._target() / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())

    def get_outputs(self, include_bytecode=True):
        extra = [str(self._target() / rel) for _, rel in resource_files()]
        return super().get_outputs(include_bytecode) + extra


class SdistWithResources(sdist):
    """sdist, plus the files labkit ships (so a wheel built from the sdist carries them)."""

    def add_defaults(self):
        super().add_defaults()
        self.filelist.extend(str(rel) for _, rel in resource_files())


setup(
    cffi_modules=["labkit/_build.py:ffibuilder"],
    cmdclass={"build_py": BuildPyWithResources, "sdist": SdistWithResources},
)

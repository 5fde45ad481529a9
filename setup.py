"""labkit's build: the C core by cffi, and what the wheel carries besides the package.

Metadata is in pyproject.toml.  ``build_py`` copies the notebooks, the published
figures, the seed mails and the reference results into the built package under
``labkit/_resources/`` (see :func:`labkit.config.resource`), so that an installed
labkit can reproduce without a clone.  The clone keeps them where they are
(``notebooks/``, ``data/``); an editable install reads them there.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent

#: (folder of the clone, file patterns): copied to labkit/_resources/<folder>/.
RESOURCES = [
    ("notebooks", ["[0-9][0-9]-*.ipynb", "sanitize.cfg", "conftest.py"]),
    ("data/published", ["*.csv", "README.md"]),
    ("data/seeds", ["*.txt", "README.md"]),
    ("data/reproduction", ["summary.csv", "summary.txt"]),
    ("data/results", ["*/*.csv", "*/*.json"]),
]


def resource_files():
    """(source, path relative to labkit/_resources) for every file the wheel carries."""
    for folder, patterns in RESOURCES:
        for pattern in patterns:
            for src in sorted((HERE / folder).glob(pattern)):
                if src.is_file() and not src.name.startswith("."):
                    yield src, src.relative_to(HERE)


class BuildPyWithResources(build_py):
    """build_py, plus the notebooks and data files under labkit/_resources/."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "labkit" / "_resources"
        for src, rel in resource_files():
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)

    def get_outputs(self, include_bytecode=True):
        target = Path(self.build_lib) / "labkit" / "_resources"
        extra = [str(target / rel) for _, rel in resource_files()]
        return super().get_outputs(include_bytecode) + extra


setup(
    cffi_modules=["labkit/_build.py:ffibuilder"],
    cmdclass={"build_py": BuildPyWithResources},
)

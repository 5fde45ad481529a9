"""The kernel bench's eras, configurations and CPU models, and what it needs installed.

An era is Debian's 6.1 tree with a list of patches; each differs from stock 6.1 by
one change.  Patches are the repository's GPL-2.0 files in ``kernel/gpl/`` (with
their provenance in kernel/gpl/README.md), or ``@seed``: the seed mail's two
patches as mailed, cut from ``data/seeds/2023-iov_iter-ubuf-import-thread.txt``
(the same cut :mod:`labkit.kernelsrc.build` applies).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from labkit.kernelsrc.build import patch_texts as kernelsrc_patch_texts

HERE = Path(__file__).resolve().parent
CONFIG_DIR = HERE / "config"

#: The one command that installs what the bench needs (Debian/Ubuntu).
INSTALL_HINT = (
    "apt-get install -y qemu-system-x86 linux-source-6.1 gcc libc6-dev make bc flex bison "
    "libelf-dev libssl-dev xz-utils patch"
)

_BUILD_TOOLS = ("gcc", "make", "bc", "flex", "bison", "patch", "tar", "xz")


class KernelVMError(RuntimeError):
    """A tool, a tree or a step of the kernel bench is missing or failed; the message says
    what to do."""


@dataclass(frozen=True)
class Era:
    """6.1 with ``patches`` applied in order (names in kernel/gpl/, or ``@seed``)."""

    name: str
    patches: tuple[str, ...]
    what: str


_UBUF = "0001-iov_iter-backport-import_ubuf-from-6.2.patch"

#: The eras, each stock 6.1 plus one change.
ERAS: dict[str, Era] = {
    e.name: e
    for e in (
        Era("6.1", (), "Debian's linux-source-6.1 as shipped"),
        Era(
            "6.1+v1",
            (_UBUF, "@seed"),
            "the seed mail's two patches as mailed (v1), with import_ubuf() from 6.2",
        ),
        Era(
            "6.1+merged",
            (
                _UBUF,
                "0003-iov_iter-convert-import_single_range-to-ITER_UBUF.patch",
                "0004-iov_iter-import-single-vector-iovecs-as-ITER_UBUF.patch",
            ),
            "the change as merged into 6.4 (e03ad4ee2783, 3b2deb0e46da), with import_ubuf()",
        ),
        Era(
            "6.1+r3",
            ("0005-io_uring-rw-transform-single-vector-readv-into-ubuf.patch",),
            "R3's rewrite: io_uring turns a one-segment READV into READ",
        ),
        Era(
            "6.1-r1fix",
            ("0006-io_uring-undo-fixed-buffer-advance-fix.patch",),
            "R1's before: io_import_fixed() with iov_iter_advance() for every offset",
        ),
    )
}

#: Config fragments applied after ``make tinyconfig``, per configuration.
CONFIGS: dict[str, tuple[str, ...]] = {
    "base": ("base.config",),
    "mitigations": ("base.config", "mitigations.config"),
}

#: QEMU CPU models (TCG): ``max`` has ERMS (``rep stos``/``movs`` by bytes) and no FSRM in
#: QEMU 7.2; ``max-erms`` turns both off, so the kernel copies and clears by quadwords.
CPUS: dict[str, str] = {"max": "max", "max-erms": "max,-erms,-fsrm"}


def patch_texts(era: Era) -> list[tuple[str, str]]:
    """(name, text) of the era's patches, in order."""
    return kernelsrc_patch_texts(era.patches, era.name, KernelVMError)


def config_text(config: str) -> str:
    """The configuration's fragments, concatenated."""
    return "".join((CONFIG_DIR / f).read_text() for f in CONFIGS[config])


def missing_tools(*, build_only: bool = False) -> str | None:
    """None if the bench's programs (with ``build_only``: those a build needs, not QEMU) are
    all installed, else one line naming the install command."""
    tools = _BUILD_TOOLS if build_only else ("qemu-system-x86_64", *_BUILD_TOOLS)
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        return f"the kernel bench needs {', '.join(missing)}: install with {INSTALL_HINT}"
    return None

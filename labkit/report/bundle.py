"""Result bundles: one reproduction, self-contained, to compare across hosts.

A bundle is a folder::

    manifest.json        format, when, the host (fingerprint and record), the code
                         (labkit version, git commit, dirty), the mode, the sessions,
                         where it came from, notes, and the SHA-256 of every file below
    summary.csv          the summary table of the reproduction (labkit.report.summary)
    environment.json     the environment record (labkit.measure.envinfo), host included
    samples/<experiment>/<stamp>-<host>.csv.gz   every sample behind the summary
    samples/<experiment>/<stamp>-<host>.json     the environment record of that table

``labkit reproduce`` writes one into ``<out>/bundle`` (:func:`from_reproduction`);
``make gallery`` copies the full-mode one into ``data/gallery/`` (:func:`add_to_gallery`);
``labkit compare BUNDLE...`` puts bundles side by side (:mod:`labkit.report.gallery`).
:func:`load` checks the manifest's hashes, so a bundle edited by hand is refused.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import json
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from labkit import _files, _untrusted, config
from labkit.measure import host as _host
from labkit.measure.envinfo import environment, host_of

#: The format string every manifest carries.
FORMAT = "labkit-bundle/1"
#: Where the gallery is, under the clone (or, for an installed labkit, the data dir).
GALLERY = Path("data/gallery")


#: The largest state file of a notebook read back (a state is a few hundred bytes).
MAX_STATE_BYTES = 1 << 20


def state_path(out: Path, nb_name: str) -> Path:
    """``<out>/.state/<notebook stem>.json``."""
    return out / ".state" / f"{Path(nb_name).stem}.json"


def load_state(out: Path, nb_name: str) -> dict[str, Any]:
    """The stored state of a notebook ({} if none or unreadable)."""
    try:
        state = json.loads(_files.read_regular(state_path(out, nb_name), MAX_STATE_BYTES))
    except (OSError, ValueError, RecursionError):
        return {}
    return state if isinstance(state, dict) else {}


def default_gallery() -> Path:
    """The gallery folder: ``data/gallery`` of the clone, else under the data dir."""
    root = config.checkout()
    return (root if root is not None else config.data_dir()) / GALLERY


class BundleError(ValueError):
    """A bundle that cannot be read: no manifest, another format, a missing or altered file."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class Bundle:
    """A loaded bundle (:func:`load`)."""

    path: Path
    manifest: dict[str, Any]
    summary: pd.DataFrame
    environment: dict[str, Any]

    @property
    def host(self) -> dict[str, Any]:
        """The host record (for an old environment record: what it has)."""
        return host_of(self.environment)

    @property
    def fingerprint(self) -> str:
        """The host's one line (:func:`labkit.measure.host.fingerprint`)."""
        return _host.fingerprint(self.host)

    @property
    def label(self) -> str:
        """The bundle's name in a comparison, by what was recorded: the manifest's label,
        unless it names the host by hearsay ("per README"), then the recorded fingerprint
        (without its "(model not recorded)") with the rest of the label (hypervisor, date);
        without a label, the fingerprint."""
        label = str(self.manifest.get("label") or "")
        if not label:
            return self.fingerprint
        if "per README" not in label:
            return label
        name = re.sub(r"\((R|TM)\)|\s*\(model not recorded\)|\s+Processor\b", "", self.fingerprint)
        rest = label.split("), ", 1)[1] if "), " in label else ""
        return ", ".join(x for x in (" ".join(name.split()), rest) if x)

    def sample_files(self) -> list[Path]:
        """The sample tables of the bundle (``.csv.gz``), sorted."""
        return sorted((self.path / "samples").glob("*/*.csv.gz"))

    def samples(self, experiment: str) -> pd.DataFrame:
        """Every sample of ``experiment`` in the bundle, one table (a ``file`` column added).

        Raises:
            KeyError: if the bundle has no table of that experiment.
        """
        files = sorted((self.path / "samples" / experiment).glob("*.csv.gz"))
        if not files:
            raise KeyError(f"bundle {self.path} has no samples of {experiment!r}")
        return pd.concat(
            [pd.read_csv(f).assign(file=f.name[: -len(".csv.gz")]) for f in files],
            ignore_index=True,
        )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60] or "host"


def write(
    dest: str | Path,
    *,
    summary: pd.DataFrame,
    environment: dict[str, Any],
    samples: Iterable[tuple[Path, Path | None]] = (),
    source: str,
    label: str | None = None,
    notes: Iterable[str] = (),
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write a bundle into ``dest`` (a new folder; the whole folder appears at once).

    Args:
        summary: the summary table.
        environment: the environment record of the reproduction.
        samples: (CSV, its JSON record or None) of every sample table to carry; the
            CSV is stored gzipped under ``samples/<experiment>/`` (the folder the CSV
            was in names the experiment).
        source: where the bundle came from, in words ("labkit reproduce", "git
            history at 8ac1375").
        label: the bundle's name in a comparison (default: the host fingerprint).
        notes: sentences a reader should see (what was left out and why).
        extra: more manifest keys.

    Raises:
        FileExistsError: if ``dest`` exists.
        OSError: if it cannot be written (nothing is left behind).
    """
    dest = Path(dest)
    if dest.exists():
        raise FileExistsError(f"bundle: {dest} exists; choose a new folder")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        summary.to_csv(tmp / "summary.csv", index=False)
        (tmp / "environment.json").write_text(json.dumps(environment, indent=1, default=str))
        kept = []
        for csv_path, json_path in samples:
            exp = csv_path.parent.name
            (tmp / "samples" / exp).mkdir(parents=True, exist_ok=True)
            up = csv_path.parents
            session = up[2].name if len(up) > 3 and up[3].name == "sessions" else ""
            stem = f"session{session}-{csv_path.name}" if session else csv_path.name
            gz = tmp / "samples" / exp / f"{stem}.gz"
            # mtime 0: the same table always gives the same bytes (and the same hash)
            with open(csv_path, "rb") as src, open(gz, "wb") as raw:
                with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as out:
                    shutil.copyfileobj(src, out)
            if json_path is not None and json_path.is_file():
                shutil.copyfile(json_path, gz.with_name(stem[: -len(".csv")] + ".json"))
            kept.append(f"{exp}/{stem}")
        h = host_of(environment)
        manifest = {
            "format": FORMAT,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "source": source,
            "label": label or _host.fingerprint(h),
            "host_fingerprint": _host.fingerprint(h),
            "code": {k: environment.get(k) for k in ("labkit_version", "git_commit", "git_dirty")},
            "measured": environment.get("date"),
            "quick_mode": environment.get("quick_mode"),
            "sessions": int((extra or {}).get("sessions", 1)),
            "samples": kept,
            "notes": list(notes),
            **{k: v for k, v in (extra or {}).items() if k != "sessions"},
        }
        manifest["files"] = {
            str(p.relative_to(tmp)): _sha256(p) for p in sorted(tmp.rglob("*")) if p.is_file()
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str) + "\n")
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


#: Largest file of a bundle read back (bytes).
MAX_FILE_BYTES = 256 << 20


def load(path: str | Path) -> Bundle:
    """Read a bundle, checking its format and every file's hash.

    Every file is read by the one reader of untrusted files (:mod:`labkit._untrusted`:
    regular files only, bounded size and depth, an object where one is expected).

    Raises:
        BundleError: no manifest, another format, a file missing, altered or malformed.
    """
    p = Path(path)
    man_path = p / "manifest.json"
    if not (man_path.exists() or man_path.is_symlink()):
        raise BundleError(f"{p}: not a labkit bundle (no manifest.json)")
    try:
        manifest = _untrusted.read_json(man_path, "manifest")
        files = manifest.get("files") or {}
        if manifest.get("format") != FORMAT:
            raise BundleError(f"{p}: format {manifest.get('format')!r}, expected {FORMAT!r}")
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()
        ):
            raise BundleError(f"{man_path}: its 'files' is not an object of names and hashes")
        for rel, digest in files.items():
            f = p / rel
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise BundleError(f"{p}: the manifest names a file outside the bundle ({rel})")
            if not (f.exists() or f.is_symlink()):
                raise BundleError(f"{p}: {rel} is missing")
            if _untrusted.sha256_of(f, MAX_FILE_BYTES) != digest:
                raise BundleError(f"{p}: {rel} was changed after the bundle was written")
        for need in ("summary.csv", "environment.json"):
            if need not in files:
                raise BundleError(f"{p}: the manifest lists no {need}")
        summary = _untrusted.read_csv(p / "summary.csv", "summary", limit=MAX_FILE_BYTES)
        environment = _untrusted.read_json(p / "environment.json", "environment record")
    except _untrusted.UntrustedFileError as exc:
        raise BundleError(str(exc)) from None
    return Bundle(p, manifest, summary, environment)


class HostsWarning(UserWarning):
    """A bundle given twice (counted once), or bundles of one host (pooled as one host)."""


def one_per_host(bundles: Iterable[Bundle]) -> list[Bundle]:
    """The bundles with each bundle once (by folder or by content); a :class:`HostsWarning`
    names what was dropped and the bundles that share a host fingerprint (which a
    comparison pools as one host)."""
    kept: list[Bundle] = []
    notes: list[str] = []
    seen: dict[Any, Bundle] = {}
    for b in bundles:
        ident = json.dumps(b.manifest.get("files") or {}, sort_keys=True)
        first = seen.get(b.path.resolve()) or seen.get(ident)
        if first is not None:
            notes.append(f"{b.path} is the same bundle as {first.path}: counted once")
            continue
        seen[b.path.resolve()] = seen[ident] = b
        kept.append(b)
    hosts: dict[str, list[Bundle]] = {}
    for b in kept:
        hosts.setdefault(b.fingerprint, []).append(b)
    for fp, group in hosts.items():
        if len(group) > 1:
            names = ", ".join(str(b.path) for b in group)
            notes.append(f"{names} come from one host ({fp}): pooled as one host")
    for note in notes:
        warnings.warn(note, HostsWarning, stacklevel=2)
    return kept


def from_reproduction(out: str | Path, dest: str | Path | None = None) -> Path:
    """The bundle of the reproduction in ``out`` (``labkit reproduce``'s folder), written to
    ``dest`` (default ``<out>/bundle``, replaced if there).

    The summary is ``<out>/summary.csv``; the samples every table under
    ``<out>/results/``; the environment record is taken now, on the machine that
    just measured (the samples' own records travel with them).

    Raises:
        FileNotFoundError: if ``<out>/summary.csv`` is missing.
    """
    out = Path(out)
    summary = pd.read_csv(out / "summary.csv")
    dest = Path(dest) if dest is not None else out / "bundle"
    quick = bool(summary["quick"].any()) if "quick" in summary.columns else None
    env = environment(quick=quick)
    found = _this_run(out, sorted((out / "results").glob("*/*.csv")))
    found += sorted((out / "sessions").glob("*/results/*/*.csv"))  # labkit reproduce --sessions
    samples = [(c, c.with_suffix(".json")) for c in found]
    sessions = json_sessions(out)
    old = None
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        dest.rename(old)
    try:
        write(
            dest,
            summary=summary,
            environment=env,
            samples=samples,
            source="labkit reproduce",
            extra={"sessions": sessions},
        )
    except BaseException:
        if old is not None and not dest.exists():
            old.rename(dest)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return dest


def _stamp_of(name: str) -> _dt.datetime | None:
    """The UTC time in a result file's name (``20261203T161837Z-vm.csv``), or None."""
    try:
        return _dt.datetime.strptime(name[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=_dt.timezone.utc)
    except ValueError:
        return None


def _phase_sessions(out: Path) -> list[str]:
    """The session names of the measuring phase in ``out`` (``measured/index.json``:
    ``01-20261203T163223Z``, ...), or [] when it recorded none."""
    try:
        names = json.loads((out / "measured" / "index.json").read_text())["sessions"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [str(n) for n in names] if isinstance(names, list) else []


def _window(out: Path) -> tuple[_dt.datetime, _dt.datetime] | None:
    """When the reproduction in ``out`` measured: from its measuring phase's first session
    (or its first notebook's start) to its last notebook's end, or None if not recorded."""
    starts, ends = [], []
    for path in sorted((out / ".state").glob("*.json")):
        st = load_state(out, path.name)
        try:
            starts.append(_dt.datetime.fromisoformat(st["started"]))
            ends.append(_dt.datetime.fromisoformat(st["finished"]))
        except (ValueError, KeyError, TypeError):
            continue
    starts += [t for t in (_stamp_of(n.split("-", 1)[-1]) for n in _phase_sessions(out)) if t]
    if not starts or not ends:
        return None
    second = _dt.timedelta(seconds=1)  # file names keep whole seconds
    return min(starts) - second, max(ends) + second


def _this_run(out: Path, files: list[Path]) -> list[Path]:
    """Of the result files under ``<out>/results``, those the reproduction in ``out`` wrote
    (the folder keeps every earlier run's too): saved within :func:`_window`.  All of
    them when the window is not recorded; a file whose name carries no time is kept."""
    window = _window(out)
    if window is None:
        return files
    lo, hi = window

    def inside(path: Path) -> bool:
        t = _stamp_of(path.name)
        return t is None or lo <= t <= hi

    return [f for f in files if inside(f)]


def json_sessions(out: Path) -> int:
    """The number of sessions a reproduction in ``out`` measured (its measuring phase's
    ``measured/index.json``, or an older run's ``.state/sessions.json``; 1 when neither
    says)."""
    names = _phase_sessions(out)
    if names:
        return len(names)
    try:
        return int(json.loads((out / ".state" / "sessions.json").read_text())["sessions"])
    except (OSError, ValueError, KeyError, TypeError):
        return 1


def add_to_gallery(bundle: str | Path, gallery: str | Path | None = None) -> Path:
    """Copy a bundle into the gallery as ``<date>-<fingerprint>`` (checked first).

    Raises:
        BundleError: if the bundle does not load.
        FileExistsError: if the gallery has a bundle of that name already.
    """
    b = load(bundle)
    gallery = Path(gallery) if gallery is not None else default_gallery()
    date = str(b.manifest.get("measured") or b.manifest.get("created") or "")[:10]
    dest = Path(gallery) / f"{date}-{_slug(b.fingerprint)}"
    if dest.exists():
        raise FileExistsError(f"gallery: {dest} exists")
    Path(gallery).mkdir(parents=True, exist_ok=True)
    shutil.copytree(b.path, dest)
    return dest


def gallery_bundles(gallery: str | Path | None = None) -> list[Path]:
    """The bundles of a gallery folder (default :func:`default_gallery`), sorted by name."""
    folder = Path(gallery) if gallery is not None else default_gallery()
    return sorted(p.parent for p in folder.glob("*/manifest.json"))


def gallery_with_this_run(
    gallery: str | Path | None = None, out: str | Path | None = None
) -> list[Bundle]:
    """The gallery's bundles, with the bundle of the reproduction in ``out`` (default:
    ``$LABKIT_OUT``, the reproduction this notebook runs in) in the place of its host's.

    A reproduction's bundle (``<out>/bundle``) is the one of its host the gallery shows
    when it is newer than the gallery's bundle of that host (same fingerprint), or the
    gallery has none: so ``make reference`` shows the run it stores, not the one before.
    A bundle that does not load is left out, as a gallery without it.
    """
    found = [load(p) for p in gallery_bundles(gallery)]
    where = Path(out) if out is not None else config.out_setting()
    if where is None or not (where / "bundle" / "manifest.json").is_file():
        return found
    try:
        mine = load(where / "bundle")
    except BundleError:
        return found

    def when(b: Bundle) -> str:
        return str(b.manifest.get("measured") or b.manifest.get("created") or "")

    same = [b for b in found if b.fingerprint == mine.fingerprint]
    if any(when(b) >= when(mine) for b in same):
        return found
    return [b for b in found if b.fingerprint != mine.fingerprint] + [mine]


__all__ = [
    "BundleError",
    "add_to_gallery",
    "gallery_bundles",
    "gallery_with_this_run",
    "load",
    "write",
]

"""The one reader of files labkit did not just write: result tables, bundles, records.

A file read back may have been written by anyone (a shared output folder, a
bundle from another host, a cache). Every such read goes through this module:

* regular files only: a FIFO, a device, a folder or a link to one is refused,
  never read or waited on (:func:`labkit._files.read_regular`);
* a size limit per kind of file;
* JSON nested at most :data:`MAX_JSON_DEPTH` levels (checked before parsing,
  so no RecursionError), and of the expected type (an object where an object
  is expected);
* CSV with exactly as many fields in every row as in its header;
* UTF-8 text without NUL bytes.

A file that breaks a rule raises :class:`UntrustedFileError` (a ValueError)
naming the file and what is wrong, in one line.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

from labkit import _files

#: Deepest nesting of arrays and objects accepted in a JSON file.
MAX_JSON_DEPTH = 32
#: Default size limits (bytes): JSON records, CSV tables.
MAX_JSON_BYTES = 16 << 20
MAX_CSV_BYTES = 256 << 20

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


class UntrustedFileError(ValueError):
    """A file read back that does not hold what labkit writes.

    Attributes:
        path: the file at fault.
        reason: what is wrong with it, in a few words.
    """

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (strings skipped)."""
    depth = deepest = 0
    for m in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if m.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def read_bytes(path: Path | str, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``)."""
    try:
        return _files.read_regular(path, limit)
    except OSError as exc:
        raise UntrustedFileError(path, f"cannot read the {what}: {exc.strerror or exc}") from None


def decode_text(data: bytes, path: Path | str, what: str = "file") -> str:
    """``data`` as UTF-8 text: not empty, no NUL byte."""
    if not data.strip():
        raise UntrustedFileError(path, f"the {what} is empty")
    if b"\0" in data:
        raise UntrustedFileError(path, f"the {what} is binary, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UntrustedFileError(path, f"the {what} is not UTF-8 text") from None


def read_text(path: Path | str, limit: int, what: str = "file") -> str:
    """The UTF-8 text of the regular file ``path`` (at most ``limit`` bytes, not empty)."""
    return decode_text(read_bytes(path, limit, what), path, what)


def parse_json(
    text: str | bytes,
    path: Path | str,
    what: str = "JSON file",
    *,
    expect: type | tuple[type, ...] | None = dict,
    max_depth: int = MAX_JSON_DEPTH,
) -> Any:
    """Parse JSON ``text`` read from ``path``: bounded depth, of type ``expect`` (None: any)."""
    if isinstance(text, bytes):
        text = decode_text(text, path, what)
    if json_depth(text) > max_depth:
        raise UntrustedFileError(path, f"the {what} is nested deeper than {max_depth} levels")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UntrustedFileError(path, f"the {what} is not JSON ({first})") from None
    if expect is not None and not isinstance(value, expect):
        want = expect if isinstance(expect, tuple) else (expect,)
        names = " or ".join({dict: "an object", list: "an array"}.get(t, t.__name__) for t in want)
        raise UntrustedFileError(path, f"the {what} is a JSON {type(value).__name__}, not {names}")
    return value


def read_json(
    path: Path | str,
    what: str = "JSON file",
    *,
    limit: int = MAX_JSON_BYTES,
    expect: type | tuple[type, ...] | None = dict,
    max_depth: int = MAX_JSON_DEPTH,
) -> Any:
    """Read and parse the JSON file ``path`` by the rules above."""
    return parse_json(read_text(path, limit, what), path, what, expect=expect, max_depth=max_depth)


def check_csv_fields(text: str, path: Path | str, what: str = "CSV file") -> None:
    """Every row of CSV ``text`` has as many fields as its header (blank lines aside)."""
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            raise UntrustedFileError(path, f"the {what} has no header")
        for row in reader:
            if row and len(row) != len(header):
                raise UntrustedFileError(
                    path,
                    f"the {what}'s line {reader.line_num} has {len(row)} fields, "
                    f"its header {len(header)}",
                )
    except csv.Error as exc:
        raise UntrustedFileError(path, f"the {what} is not CSV ({exc})") from None


def read_csv(
    path: Path | str, what: str = "CSV file", *, limit: int = MAX_CSV_BYTES, **read_csv_args: Any
) -> Any:
    """The CSV file ``path`` as a DataFrame, checked by the rules above."""
    import pandas as pd  # on use: the layer-0 readers of JSON need no pandas

    text = read_text(path, limit, what)
    check_csv_fields(text, path, what)
    try:
        return pd.read_csv(io.StringIO(text), **read_csv_args)
    except Exception as exc:  # noqa: BLE001 - whatever pandas makes of it: named, refused
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UntrustedFileError(path, f"the {what} is not a readable table ({first})") from None


def sha256_of(path: Path | str, limit: int, what: str = "file") -> str:
    """The sha256 of the regular file ``path`` (at most ``limit`` bytes)."""
    return hashlib.sha256(read_bytes(path, limit, what)).hexdigest()


__all__: list[str] = []  # internal: the one reader of untrusted files

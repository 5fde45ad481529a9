"""The one convention for an experiment's sizes: a frozen dataclass with quick and full values.

Every experiment's parameters are one subclass of :class:`Params`: its fields
are the sizes (calls per batch, rounds, buffer bytes, ...), its classmethods
:meth:`~Params.quick` and :meth:`~Params.full` give the values of quick mode
(CI) and full mode (a reproduction), and :meth:`~Params.for_mode` picks one
by :func:`labkit.config.quick_mode`.  The parameters travel to a worker
process as JSON (:meth:`~Params.to_json`, :meth:`~Params.from_json`: tuples
come back as tuples), and the same JSON keys a cache of measurements.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, TypeVar

from labkit.config import quick_mode

P = TypeVar("P", bound="Params")


@dataclasses.dataclass(frozen=True)
class Params:
    """Base of every experiment's parameters (subclasses are frozen dataclasses)."""

    @classmethod
    def quick(cls: type[P]) -> P:
        """The values of quick mode (CI: small and fast)."""
        raise NotImplementedError(f"{cls.__name__} declares no quick values")

    @classmethod
    def full(cls: type[P]) -> P:
        """The values of full mode (what a reproduction publishes)."""
        raise NotImplementedError(f"{cls.__name__} declares no full values")

    @classmethod
    def for_mode(cls: type[P], quick: bool | None = None) -> P:
        """:meth:`quick` or :meth:`full`, as :func:`labkit.config.quick_mode` decides."""
        return cls.quick() if quick_mode(quick) else cls.full()

    def to_json(self) -> dict[str, Any]:
        """The fields as JSON-able values (tuples as lists)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls: type[P], data: Mapping[str, Any]) -> P:
        """The parameters :meth:`to_json` gave (lists back to tuples).

        Raises:
            TypeError: for a key that is not a field, or a missing field without default.
        """
        names = {f.name: f for f in dataclasses.fields(cls)}
        extra = sorted(set(data) - set(names))
        if extra:
            raise TypeError(f"{cls.__name__}: unknown parameter(s) {extra}")
        return cls(**{k: _tuples(v) for k, v in data.items()})

    def key(self) -> str:
        """The parameters as one canonical string (what a cache of measurements is keyed by)."""
        return json.dumps(self.to_json(), sort_keys=True)

    def replace(self: P, **changes: Any) -> P:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


__all__ = ["Params"]

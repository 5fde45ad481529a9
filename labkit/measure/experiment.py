"""An experiment: its parameters, and the function of one run measured in worker runs.

**Its parameters.**  Every experiment's sizes are one subclass of :class:`Params`: its
fields are the sizes (calls per batch, rounds, buffer bytes, ...), its classmethods
:meth:`~Params.quick` and :meth:`~Params.full` give the values of quick mode (CI) and full
mode (a reproduction), and :meth:`~Params.for_mode` picks one by
:func:`labkit.config.quick_mode`.  The parameters travel to a worker process as JSON
(:meth:`~Params.to_json`, :meth:`~Params.from_json`: tuples come back as tuples), and the
same JSON keys a cache of measurements.

**Its runs.**  :func:`in_workers` turns the function one worker runs into the public
experiment: it binds and checks the arguments in the parent, ships them as JSON, registers
the function as a worker target (:func:`labkit.measure.workers.target`) and returns
:func:`labkit.measure.workers.run_in_workers`' rows.

The function's own signature says how its arguments travel: a parameter annotated
with a ``Literal[...]`` is checked against its choices in the parent (before a
worker starts), and one annotated with a class that has ``to_json`` and a
``from_json`` classmethod (an experiment's :class:`Params`)
goes as that JSON and comes back as that class in the worker.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import numbers
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from labkit.config import quick_mode
from labkit.measure import runner
from labkit.measure.workers import DEFAULT_TIMEOUT, run_in_workers, target

if TYPE_CHECKING:
    import pandas as pd

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
        return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

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


def _jsonable(value: Any) -> Any:
    """``value`` as JSON carries it: numbers as int / float, iterables as lists."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, (bytes, bytearray)):
        return [_jsonable(v) for v in value]
    return value  # run_in_workers refuses it with a TypeError


def _tuples(value: Any) -> Any:
    """What :func:`_jsonable` made of a tuple, a tuple again (JSON has only lists)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


#: For an argument that cannot travel as JSON: (parent -> JSON-able, JSON -> worker's value).
Shipped = tuple[Callable[[Any], Any], Callable[[Any], Any]]
Arguments = Mapping[str, Any]


def _annotations(fn: Callable[..., Any]) -> dict[str, Any]:
    """``fn``'s parameter annotations that resolve when it runs (a name imported only for
    type checkers does not, and is left out)."""
    out = {}
    for name, param in inspect.signature(fn).parameters.items():
        ann = param.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, fn.__globals__)  # what typing.get_type_hints does, per name
            except Exception:
                continue
        out[name] = ann
    return out


def _travels_as_json(ann: Any) -> bool:
    """A class whose values go to a worker by their own ``to_json`` / ``from_json``."""
    return (
        isinstance(ann, type)
        and callable(getattr(ann, "from_json", None))
        and (callable(getattr(ann, "to_json", None)))
    )


def in_workers(
    target_id: str,
    *,
    allow_io_threads: bool = True,
    ship: Mapping[str, Shipped] | None = None,
    here: Callable[[Arguments], bool] | None = None,
) -> Callable[[Callable[..., runner.Rows]], Callable[..., pd.DataFrame]]:
    """Decorator: an experiment measured in ``runs`` workers, from the function of one run.

    The decorated ``fn`` measures once, in the calling process, and returns its
    rows.  The experiment returned in its place takes ``fn``'s arguments and
    keyword-only ones more: ``runs`` (independent worker runs, 1 unless given:
    how many a claim needs is the claim's budget, :mod:`labkit.claims`),
    ``timeout`` (seconds each worker may take) and ``progress`` (a line per run).
    It binds the arguments as ``fn`` would (defaults applied), refuses one outside
    its ``Literal[...]`` annotation with a ValueError (before a worker starts), makes
    each JSON-able (iterables as lists; an argument annotated with a class that has
    ``to_json``/``from_json`` goes by them; one named in ``ship`` goes through its
    pair of functions), and returns :func:`run_in_workers`' DataFrame, pinned to
    the ``cpu`` argument if ``fn`` has one.  Where ``here(arguments)`` is true,
    ``fn`` runs in this process instead and its rows come back as a DataFrame.

    ``fn`` is what each worker runs, registered as worker target ``target_id``
    (the ``in_worker`` attribute of the experiment); ``allow_io_threads=False`` is
    registered with it (the worker must stay single-threaded, :mod:`labkit.measure.threads`).
    """

    def wrap(fn: Callable[..., runner.Rows]) -> Callable[..., pd.DataFrame]:
        sig = inspect.signature(fn)
        annotations = _annotations(fn)
        choices = {
            name: typing.get_args(ann)
            for name, ann in annotations.items()
            if typing.get_origin(ann) is typing.Literal
        }
        shipped = {
            name: (ann.to_json, ann.from_json)
            for name, ann in annotations.items()
            if _travels_as_json(ann)
        }
        shipped.update(ship or {})

        @functools.wraps(fn)
        def experiment(
            *args: Any,
            runs: int = 1,
            timeout: float = DEFAULT_TIMEOUT,
            progress: bool = False,
            **kwargs: Any,
        ) -> pd.DataFrame:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            for name, allowed in choices.items():
                if arguments[name] not in allowed:
                    raise ValueError(f"{name} must be one of {allowed}, got {arguments[name]!r}")
            if here is not None and here(arguments):
                import pandas as pd  # on use: the workers import this module

                rows = fn(**arguments)
                return pd.DataFrame(rows, columns=list(rows[0]))
            sent = {
                k: shipped[k][0](v) if k in shipped else _jsonable(v) for k, v in arguments.items()
            }
            return run_in_workers(
                in_worker,
                sent,
                runs=runs,
                cpu=arguments.get("cpu"),
                timeout=timeout,
                progress=progress,
            )

        def in_worker(**sent: Any) -> runner.Rows:
            return fn(**{k: shipped[k][1](v) if k in shipped else v for k, v in sent.items()})

        in_worker.__qualname__ = f"{fn.__qualname__}.in_worker"
        in_worker.__module__ = fn.__module__
        target(target_id, allow_io_threads=allow_io_threads)(in_worker)

        kw = inspect.Parameter.KEYWORD_ONLY
        extra = [
            inspect.Parameter("runs", kw, default=1, annotation="int"),
            inspect.Parameter("timeout", kw, default=DEFAULT_TIMEOUT, annotation="float"),
            inspect.Parameter("progress", kw, default=False, annotation="bool"),
        ]
        experiment.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[*sig.parameters.values(), *extra], return_annotation="pd.DataFrame"
        )
        experiment.in_worker = in_worker  # type: ignore[attr-defined]
        return experiment

    return wrap


__all__ = [
    "Arguments",
    "Params",
    "in_workers",
]

"""Studies as plain records: one way to turn a result into JSON and back.

A study that a later lesson reads (lesson 12 reads lessons 05-11) is a
dataclass that mixes in :class:`Record`. ``to_record()`` gives plain
JSON-ready values (arrays become nested lists, NaN becomes ``None``) and
``Cls.from_record(d)`` rebuilds the study, turning lists back into arrays
for the fields annotated as arrays or tensors. Saving and loading files is
:mod:`attnlab.course.results`' job; this module only converts.

Numbers that are not finite (NaN, +inf, -inf: a head that attends evenly has
no fixedness, a statistic of one text has no interval) are written as JSON
``null``, because strict JSON has no such numbers, and read back as NaN by
:func:`nan_for_none`, the one place that turns ``null`` into a number: in
fields annotated ``float``, arrays and tensors, intervals and the numbers of
verdicts. (Infinities therefore come back as NaN: "no finite number".)
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, TypeVar

import numpy as np
import torch

R = TypeVar("R", bound="Record")


class RecordError(ValueError):
    """A saved record does not fit the study it should describe (missing or malformed field)."""


def to_plain(value: Any) -> Any:
    """``value`` with arrays, tensors and numpy scalars as lists and numbers; NaN and inf as None."""
    if isinstance(value, Record):
        return value.to_record()
    if hasattr(value, "to_record") and callable(value.to_record):
        return to_plain(value.to_record())  # a hand-written to_record may still hold NaN
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, torch.Tensor):
        return to_plain(value.detach().cpu().tolist())
    if isinstance(value, np.ndarray):
        return to_plain(value.tolist())
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return to_plain(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _array(value: Any, dtype) -> np.ndarray:
    return np.array(nan_for_none(value), dtype=dtype)


def nan_for_none(value: Any) -> Any:
    """``value`` with every ``None`` (a non-finite number written by :func:`to_plain`) as NaN.

    Goes into lists, tuples and dict values; leaves strings, numbers and other values alone.
    """
    if value is None:
        return float("nan")
    if isinstance(value, (list, tuple)):
        return [nan_for_none(v) for v in value]
    if isinstance(value, dict):
        return {k: nan_for_none(v) for k, v in value.items()}
    return value


def _convert(value: Any, hint: Any, where: str) -> Any:
    """Turn a plain JSON value back into the annotated type (arrays, tensors, records, floats)."""
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None and len(options) < len(typing.get_args(hint)):
            return None
        hint = options[0] if options else Any
        origin = typing.get_origin(hint)
    try:
        if hint is np.ndarray:
            return _array(value, float)
        if hint is torch.Tensor:
            return torch.tensor(_array(value, float))
        if isinstance(hint, type) and hasattr(hint, "from_record"):
            return hint.from_record(value)
        if hint is float:
            return float("nan") if value is None else float(value)
        if hint is int:
            return int(value)
        if origin in (list, tuple) and typing.get_args(hint):
            inner = typing.get_args(hint)[0]
            items = [_convert(v, inner, where) for v in value]
            return tuple(items) if origin is tuple else items
        if origin is dict and len(typing.get_args(hint)) == 2:
            inner = typing.get_args(hint)[1]
            return {k: _convert(v, inner, where) for k, v in value.items()}
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise RecordError(f"field {where!r} cannot be read back: {exc}") from exc
    return value


class Record:
    """Mixin for dataclasses that later lessons read back (see the module docstring)."""

    def to_record(self) -> dict:
        """Every field as plain JSON-ready values."""
        return {f.name: to_plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_record(cls: type[R], data: dict) -> R:
        """The study back from :meth:`to_record`'s dict; :class:`RecordError` if it does not fit."""
        if not isinstance(data, dict):
            raise RecordError(f"a {cls.__name__} record must be a dict, got {type(data).__name__}")
        hints = typing.get_type_hints(cls)
        kwargs = {}
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            if f.name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise RecordError(f"a {cls.__name__} record lacks the field {f.name!r}")
                continue
            kwargs[f.name] = _convert(data[f.name], hints.get(f.name, Any), f.name)
        return cls(**kwargs)

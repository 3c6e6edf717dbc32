"""One memo for work computed from a model: :func:`memo` computes a result once
per model, run mode and arguments, and hands the same object back afterwards.

Lessons, exercises and figures reuse bulk results (a survey of every head, a
mean over thousands of queries, the masked-LM head) without computing them
again. Every cache of such results in the package is this one, so three rules
hold everywhere:

* **model identity**: entries belong to one :class:`~attnlab.core.models.LoadedModel`
  object (not its name, not ``id()`` alone, which Python reuses once an object
  is gone). Two models never share an entry, even with the same name and shape;
* **run mode**: smoke mode (``ATTNLAB_SMOKE=1``) and full mode never share an
  entry, since the sizes behind a result differ;
* **lifetime**: a model's entries go when the model is garbage-collected (the
  store holds only a weak reference to it).

The bootstrap intervals a sensitivity table measures on one lesson record are held
here too, with the record in the model's place, for the length of one table
(:func:`attnlab.analysis.stats.measurements_reused` forgets them at its end: a
record, unlike a model, may be changed afterwards).

(Look-ups of a module's structure, which do not depend on the run mode, keep
their own weak tables on the torch module: the attention module paths of
:mod:`attnlab.core.run` and the int8 copies of :mod:`attnlab.core.fast`.)

A result that itself holds the model (e.g. an ``Objective`` of
:mod:`attnlab.analysis.importance`) would keep the model alive: memoize
results made of numbers and arrays.

Typical use::

    from attnlab.core.memo import memo
    stats = memo(m, "survey", (n_texts, n_pairs), lambda: survey_stats(m, texts, n_pairs=n_pairs))
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Hashable, TypeVar

from attnlab.core.config import is_smoke

T = TypeVar("T")

#: ``id(model)`` -> (weak reference to the model, {(name, smoke, key): result})
_STORE: dict[int, tuple[weakref.ref, dict[tuple, Any]]] = {}


def _entries(m: object, *, create: bool) -> dict[tuple, Any] | None:
    """The entries of ``m`` (made when ``create``), after checking that the slot is ``m``'s own."""
    slot = _STORE.get(id(m))
    if slot is not None and slot[0]() is m:
        return slot[1]
    if not create:
        return None
    ident = id(m)

    def drop(ref: weakref.ref) -> None:
        current = _STORE.get(ident)
        if current is not None and current[0] is ref:  # not a newer model that reuses the id
            del _STORE[ident]

    try:
        ref = weakref.ref(m, drop)
    except TypeError:
        raise TypeError(f"memo needs a model object that can be weakly referenced, got {type(m).__name__}") from None
    entries: dict[tuple, Any] = {}
    _STORE[ident] = (ref, entries)
    return entries


def _full_key(name: str, key: Hashable, smoke: bool | None) -> tuple:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a memo name must be a non-empty string, got {name!r}")
    return (name, is_smoke() if smoke is None else bool(smoke), key)


def memo(m: object, name: str, key: Hashable, compute: Callable[[], T], *, smoke: bool | None = None) -> T:
    """``compute()`` once for model ``m``, ``name``, the run mode and ``key``; the same object afterwards.

    Args:
        m: the model the result belongs to (a :class:`~attnlab.core.models.LoadedModel`).
        name: what is computed (a module's or lesson's name for it, e.g. ``"survey"``).
        key: the arguments the result depends on (a hashable value, e.g. a tuple of sizes).
        compute: makes the result; called only when no entry exists. An exception
            leaves no entry behind.
        smoke: the run mode the result belongs to (default: the current one,
            :func:`attnlab.core.config.is_smoke`).

    Returns:
        The stored result (the very object ``compute`` returned the first time).
    """
    full = _full_key(name, key, smoke)
    entries = _entries(m, create=True)
    if full not in entries:
        entries[full] = compute()
    return entries[full]


def is_memoized(m: object, name: str, key: Hashable, *, smoke: bool | None = None) -> bool:
    """Whether :func:`memo` holds a result for ``m``, ``name``, the run mode and ``key``."""
    entries = _entries(m, create=False)
    return entries is not None and _full_key(name, key, smoke) in entries


def forget(m: object) -> None:
    """Drop every entry of ``m`` (e.g. after changing its weights in place)."""
    slot = _STORE.get(id(m))
    if slot is not None and slot[0]() is m:
        del _STORE[id(m)]


def models_held() -> int:
    """How many models have entries (a model's entries go when it is garbage-collected)."""
    return len(_STORE)

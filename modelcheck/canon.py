"""A state's fingerprint: the world's rows and every engine's memory, in canonical form.

Walks objects generically (their attributes, dicts, lists, sets, dataclasses), so that a
new field of the registry or the session lease counts without this file knowing of it.
Dicts and sets are sorted: two schedules that reach the same rows and the same memories in
a different order reach one state. Callables, locks and loggers are not state.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import random
import threading
import types
from typing import Any

_SKIPPED = (
    logging.Logger,
    type(threading.Lock()),
    type(threading.RLock()),
    threading.Event,
    threading.Condition,
)


def canon(value: Any, skip: frozenset[int] = frozenset()) -> Any:
    return _Walker(skip).walk(value)


def fingerprint(value: Any, skip: frozenset[int] = frozenset()) -> str:
    return hashlib.blake2b(repr(canon(value, skip)).encode(), digest_size=16).hexdigest()


class _Walker:
    def __init__(self, skip: frozenset[int]) -> None:
        self.skip = skip
        self.seen: dict[int, int] = {}

    def walk(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str, bytes, enum.Enum)):
            return value
        if id(value) in self.skip or isinstance(value, (_SKIPPED, type)) or _is_function(value):
            return "-"
        if isinstance(value, random.Random):
            return ("rng", hash(value.getstate()))
        if isinstance(value, (list, tuple)):
            return tuple(self.walk(item) for item in value)
        if isinstance(value, (set, frozenset)):
            return ("set", tuple(sorted(repr(self.walk(item)) for item in value)))
        if isinstance(value, dict):
            items = ((repr(self.walk(k)), self.walk(v)) for k, v in value.items())
            return ("dict", tuple(sorted(items, key=lambda kv: kv[0])))
        if id(value) in self.seen:
            return ("ref", type(value).__name__)
        self.seen[id(value)] = len(self.seen)
        fields = _fields(value)
        if fields is None:
            return ("opaque", type(value).__name__)
        return (type(value).__name__, tuple((n, self.walk(v)) for n, v in sorted(fields.items())))


def _is_function(value: Any) -> bool:
    return isinstance(value, (types.FunctionType, types.MethodType, types.BuiltinFunctionType))


def _fields(value: Any) -> dict[str, Any] | None:
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not _is_function(v)}
    slots = getattr(type(value), "__slots__", None)
    if slots:
        return {name: getattr(value, name, None) for name in slots}
    return None

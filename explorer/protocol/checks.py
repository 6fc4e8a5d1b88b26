"""Runtime check of a JSON value against a protocol declaration.

`problems(PassFinished, data)` lists what does not match (missing, unknown or mistyped
fields, each with its path); `event_problems(type, data)` checks a RunEvent's data
against the payload its type names. For tests and for sites that want to assert
what they emit; the declarations themselves stay plain TypedDicts.
"""

import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from explorer.protocol.events import EVENT_PAYLOADS

_SCALARS: dict[type, tuple[type, ...]] = {
    bool: (bool,), int: (int,), float: (int, float), str: (str,), type(None): (type(None),),
}


def event_problems(event_type: str, data: Any, path: str | None = None) -> list[str]:
    """What is wrong with `data` as the payload of an `event_type` event (paths start at
    `path`, default the event type)."""
    payload = EVENT_PAYLOADS.get(event_type)
    if payload is None:
        return [f"{path}: unknown event type {event_type!r}" if path else
                f"unknown event type {event_type!r}"]
    return problems(payload, data, path or event_type)


def problems(declared: Any, value: Any, path: str = "value") -> list[str]:
    if declared is Any:
        return []
    if is_typeddict(declared):
        return _record_problems(declared, value, path)
    origin = get_origin(declared)
    if origin in (Union, types.UnionType):
        return _union_problems(declared, value, path)
    if origin is Literal:
        ok = value in get_args(declared)
        return [] if ok else [f"{path}: {value!r} is not one of {get_args(declared)}"]
    if origin in (list, tuple, dict):
        return _container_problems(origin, get_args(declared), value, path)
    return _scalar_problems(declared, value, path)


def _scalar_problems(declared: Any, value: Any, path: str) -> list[str]:
    allowed = _SCALARS.get(declared)
    if allowed is None:
        raise TypeError(f"{path}: no check for the declared type {declared!r}")
    is_bool = isinstance(value, bool)
    if isinstance(value, allowed) and (declared is bool or not is_bool):
        return []
    return [f"{path}: expected {getattr(declared, '__name__', declared)}, got {value!r}"]


def _union_problems(declared: Any, value: Any, path: str) -> list[str]:
    found = [problems(option, value, path) for option in get_args(declared)]
    if any(not p for p in found):
        return []
    return [f"{path}: {value!r} matches none of {declared}"]


def _container_problems(origin: type, args: tuple[Any, ...], value: Any,
                        path: str) -> list[str]:
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {value!r}"]
        return [p for k, v in value.items() for p in problems(args[1], v, f"{path}.{k}")]
    if not isinstance(value, list | tuple):
        return [f"{path}: expected a list, got {value!r}"]
    item = args[0] if args else Any
    return [p for i, v in enumerate(value) for p in problems(item, v, f"{path}[{i}]")]


def _record_problems(declared: Any, value: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected a {declared.__name__} object, got {value!r}"]
    hints = get_type_hints(declared)
    found = [f"{path}.{key}: missing" for key in sorted(declared.__required_keys__ - set(value))]
    found += [f"{path}.{key}: not a field of {declared.__name__}"
              for key in sorted(set(value) - set(hints))]
    for key in sorted(hints.keys() & value.keys()):
        found += problems(hints[key], value[key], f"{path}.{key}")
    return found

"""Pass configuration options: registered by name with a type (TVM's
`TVM_REGISTER_PASS_CONFIG_OPTION`), validated when a PassContext is built.

The registry holds static declarations (like the op registry), never session
state: the values live on each PassContext.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.ir.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ConfigOption:
    """A registered config key: its value type, default and a one-line description."""

    name: str
    value_type: type
    default: Any = None
    description: str = ""


_OPTIONS: dict[str, ConfigOption] = {}
_LOCK = threading.Lock()


def register_pass_config(name: str, value_type: type, default: Any = None,
                         description: str = "") -> ConfigOption:
    """Declare config key `name` holding values of `value_type`.

    Re-registering with the same type updates the default and description;
    with another type it is a ConfigError (two modules disagree on the key).
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"a pass config name must be a non-empty str, got {name!r}")
    if not isinstance(value_type, type):
        raise ConfigError(f"pass config {name!r}: value_type must be a type, got {value_type!r}")
    option = ConfigOption(name, value_type, None, description)
    if default is not None:
        option = ConfigOption(name, value_type, legalize(option, default), description)
    with _LOCK:
        old = _OPTIONS.get(name)
        if old is not None and old.value_type is not value_type:
            raise ConfigError(f"pass config {name!r} is already registered with type "
                              f"{old.value_type.__name__}, not {value_type.__name__}")
        _OPTIONS[name] = option
    return option


def get_option(name: str) -> ConfigOption:
    """The registered option `name`, or a ConfigError that names it and close matches."""
    option = _OPTIONS.get(name)
    if option is None:
        raise ConfigError(_unknown_message(name))
    return option


def _unknown_message(name: object) -> str:
    close = difflib.get_close_matches(str(name), list(_OPTIONS), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return (f"pass config key {name!r} is not registered{hint} "
            f"(see PassContext.list_configs())")


def list_configs() -> dict[str, dict[str, Any]]:
    """Every registered key -> {"type", "default", "description"}, sorted by key."""
    with _LOCK:
        options = sorted(_OPTIONS.values(), key=lambda o: o.name)
    return {o.name: {"type": o.value_type.__name__, "default": o.default,
                     "description": o.description} for o in options}


def legalize_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check every key is registered and every value has the key's type; normalized copy."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigError(f"config must be a dict of registered keys, got {config!r}")
    return {key: legalize(get_option(key), value) for key, value in config.items()}


# --- value checks, one per type -----------------------------------------------------
def _as_bool(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and int(value) in (0, 1):
        return bool(value)
    raise TypeError


def _as_int(value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError
    return int(value)


def _as_float(value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError
    return float(value)


def _as_str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError
    return value


_COERCE: dict[type, Callable[[Any], Any]] = {
    bool: _as_bool, int: _as_int, float: _as_float, str: _as_str,
}


def legalize(option: ConfigOption, value: Any) -> Any:
    """`value` converted to the option's type, or a ConfigError naming the key."""
    coerce = _COERCE.get(option.value_type)
    try:
        if coerce is not None:
            return coerce(value)
        if isinstance(value, option.value_type):
            return value
        raise TypeError
    except TypeError:
        raise ConfigError(
            f"pass config {option.name!r} expects a {option.value_type.__name__}, "
            f"got {value!r} ({type(value).__name__})") from None


# --- the keys the engine's own passes and tools read --------------------------------
_BUILTIN: tuple[tuple[str, type, Any, str], ...] = (
    ("ir.enable_si_builder", bool, True,
     "SIBuilder fills and collects spans (False: CreateSpan is unknown, fill does nothing)"),
    ("relay.frontend.fill_span", bool, True,
     "frontends give each converted expression its layer name as span"),
    ("te.keep_schedule_record", bool, False,
     "schedules keep a snapshot after every primitive (off by default, as in TVM)"),
    ("relay.FuseOps.max_depth", int, 256, "maximum number of ops fused into one function"),
    ("relay.FuseOps.link_params", bool, False, "fuse constants into the fused functions"),
    ("relay.fallback_device_type", int, 1, "device type used when none is annotated (1: cpu)"),
    ("relay.backend.use_auto_scheduler", bool, False, "use auto-scheduler schedules"),
    ("tir.disable_vectorize", bool, False, "turn vectorize into a plain serial loop"),
    ("testing.immutable_module", bool, False,
     "check that no pass mutates the module it is given"),
)

for _name, _type, _default, _doc in _BUILTIN:
    register_pass_config(_name, _type, _default, _doc)

"""Compilation targets (TVM's `tvm.target`): `Target("llvm -mcpu=core-avx2")`, `Target("cuda")`.

A target is a kind plus `-key=value` options. `with Target(...)` makes it current for
the thread (`Target.current()`), which `relay.build` uses when no target is given.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Mapping
from typing import Any

from engine.ir.errors import EngineError

_KINDS: dict[str, tuple[str, ...]] = {
    # kind -> keys (what schedules are chosen by), as TVM's target kinds declare them
    "llvm": ("cpu",),
    "c": ("cpu",),
    "cuda": ("cuda", "gpu"),
    "nvptx": ("cuda", "gpu"),
    "rocm": ("rocm", "gpu"),
    "opencl": ("opencl", "gpu"),
    "vulkan": ("vulkan", "gpu"),
    "metal": ("metal", "gpu"),
}
_ALIASES = {"cpu": "llvm", "x86": "llvm", "gpu": "cuda", "nvidia": "cuda"}


class TargetError(EngineError, ValueError):
    pass


class TargetKind:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"TargetKind({self.name})"


class Target:
    """A compilation target. Equal when their canonical strings are equal."""

    _local = threading.local()

    def __init__(self, target: str | Mapping[str, Any] | Target,
                 host: str | Target | None = None) -> None:
        kind: str
        attrs: dict[str, Any]
        if isinstance(target, Target):
            kind, attrs, host = target.kind.name, dict(target.attrs), host or target.host
        elif isinstance(target, Mapping):
            spec = dict(target)
            kind = str(spec.pop("kind", ""))
            host = host or spec.pop("host", None)
            attrs = {k: v for k, v in spec.items()}
        else:
            kind, attrs = _parse(str(target))
        kind = _ALIASES.get(kind, kind)
        if kind not in _KINDS:
            known = ", ".join(sorted(_KINDS))
            raise TargetError(f"unknown target kind {kind!r} (known: {known})")
        self.kind: TargetKind = TargetKind(kind)
        self.attrs: dict[str, Any] = attrs
        self.keys: tuple[str, ...] = tuple(_KINDS[kind])
        self.host: Target | None = Target(host) if host is not None else None

    @property
    def mcpu(self) -> str:
        return str(self.attrs.get("mcpu", ""))

    def __str__(self) -> str:
        opts = " ".join(f"-{k}={v}" for k, v in sorted(self.attrs.items()))
        return f"{self.kind.name} {opts}".strip()

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def export(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.name, "keys": list(self.keys), **self.attrs}
        if self.host is not None:
            out["host"] = self.host.export()
        return out

    # --- scope -----------------------------------------------------------------------
    @classmethod
    def _stack(cls) -> list[Target]:
        stack = getattr(cls._local, "stack", None)
        if stack is None:
            stack = cls._local.stack = []
        return stack

    @classmethod
    def current(cls, allow_none: bool = True) -> Target | None:
        stack = cls._stack()
        if stack:
            return stack[-1]
        if not allow_none:
            raise TargetError("no target is in scope: use `with tvm.target.Target(...)`")
        return None

    def __enter__(self) -> Target:
        self._stack().append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack().pop()


def _parse(text: str) -> tuple[str, dict[str, Any]]:
    words = shlex.split(text)
    if not words:
        raise TargetError("empty target string")
    kind, attrs = words[0].lower(), {}
    for word in words[1:]:
        if not word.startswith("-"):
            raise TargetError(f"target option {word!r} must look like -key=value")
        key, _, value = word.lstrip("-").partition("=")
        attrs[key] = value if value else True
    return kind, attrs


TargetLike = str | Mapping[str, Any] | Target | TargetKind | None
"""How callers name a target: a string, a dict with a "kind", a Target, a kind, or None."""


def kind_of(target: TargetLike) -> str:
    """The canonical kind name of a target, leniently: "llvm -mcpu=skylake" -> "llvm",
    "cpu" -> "llvm", {"kind": "cuda"} -> "cuda", a TVM tag such as
    "nvidia/geforce-rtx-3070" -> "cuda", None or "" -> "llvm". An unknown kind comes back
    as written (lower case); `Target(...)` is the strict constructor that rejects it."""
    if isinstance(target, Target):
        return target.kind.name
    if isinstance(target, TargetKind):
        return target.name
    text = str(target.get("kind", "")) if isinstance(target, Mapping) else str(target or "")
    words = text.split()
    word = words[0].lower() if words else "llvm"
    if "nvidia" in word:
        return "cuda"
    return _ALIASES.get(word, word)


def keys_of(target: TargetLike) -> tuple[str, ...]:
    """The keys of a target's kind (what schedules are chosen by); () for an unknown kind."""
    return _KINDS.get(kind_of(target), ())


def create(target: str | Target) -> Target:
    return Target(target)


def cuda(model: str = "unknown", arch: str | None = None, options: str = "") -> Target:
    text = f"cuda -model={model}" + (f" -arch={arch}" if arch else "") + (f" {options}" if options else "")
    return Target(text)


def llvm(mcpu: str = "", options: str = "") -> Target:
    text = "llvm" + (f" -mcpu={mcpu}" if mcpu else "") + (f" {options}" if options else "")
    return Target(text)


def target_kind(target: TargetLike) -> str:
    """The schedule family a target compiles with: "cuda" for a GPU kind, else "llvm"."""
    return "cuda" if "gpu" in keys_of(target) else "llvm"


__all__ = ["Target", "TargetError", "TargetKind", "TargetLike", "create", "cuda", "keys_of",
           "kind_of", "llvm", "target_kind"]

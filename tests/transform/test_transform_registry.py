"""The pass registry: register by name in every form, get, list, errors."""

from __future__ import annotations

import pytest
from transform_testlib import logging_pass

from engine.transform import (
    ModulePass,
    PassNotFoundError,
    get_pass,
    list_passes,
    register_pass,
    registry,
)


@pytest.fixture(autouse=True)
def _private_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.list_passes()  # Relay's passes (registered by `import engine`) stay registered
    monkeypatch.setattr(registry, "_FACTORIES", dict(registry._FACTORIES))


def test_register_forms_and_get_returns_fresh_instances() -> None:
    register_pass("RegA", lambda: logging_pass("RegA", []))

    @register_pass
    def RegB() -> ModulePass:
        return logging_pass("RegB", [])

    @register_pass("RegC")
    def make_c() -> ModulePass:
        return logging_pass("RegC", [])

    instance = logging_pass("RegD", [])
    register_pass(instance)
    a1, a2 = get_pass("RegA"), get_pass("RegA")
    assert a1 is not a2 and a1.info.name == "RegA"
    assert get_pass("RegB").info.name == "RegB" and RegB().info.name == "RegB"
    assert get_pass("RegC").info.name == "RegC"
    assert get_pass("RegD") is instance
    assert {"RegA", "RegB", "RegC", "RegD"} <= set(list_passes())
    assert list_passes() == sorted(list_passes())


def test_tvm_prefixes_are_accepted() -> None:
    register_pass("RegE", lambda: logging_pass("RegE", []))
    assert get_pass("relay._transform.RegE").info.name == "RegE"
    assert get_pass("transform.RegE").info.name == "RegE"


def test_unknown_name_suggests_close_ones() -> None:
    register_pass("FoldSomething", lambda: logging_pass("FoldSomething", []))
    with pytest.raises(PassNotFoundError, match="did you mean FoldSomething"):
        get_pass("FoldSomethin")
    with pytest.raises(KeyError):
        get_pass("Nope")


def test_duplicates_need_override() -> None:
    register_pass("RegF", lambda: logging_pass("RegF", []))
    with pytest.raises(ValueError, match="already registered"):
        register_pass("RegF", lambda: logging_pass("other", []))
    register_pass("RegF", lambda: logging_pass("RegF2", []), override=True)
    assert get_pass("RegF").info.name == "RegF2"


def test_factory_must_make_a_pass() -> None:
    register_pass("RegG", lambda: 42)
    with pytest.raises(TypeError, match="not a Pass"):
        get_pass("RegG")
    with pytest.raises(TypeError):
        register_pass("RegH", 3)

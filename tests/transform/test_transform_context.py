"""PassContext: scope and thread-local stack, typed config keys, running-pass frames."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from transform_testlib import Recorder, logging_pass, make_module

from engine.instrument import PassInstrument
from engine.ir import ConfigError
from engine.transform import PassContext, Sequential, module_pass, register_pass_config


def test_current_is_default_outside_and_innermost_inside() -> None:
    default = PassContext.current()
    assert PassContext.current() is default
    assert (default.opt_level, default.instruments, default.required_pass) == (2, (), ())
    with PassContext(opt_level=3) as outer:
        assert PassContext.current() is outer
        with PassContext(opt_level=1) as inner:
            assert PassContext.current() is inner
        assert PassContext.current() is outer
    assert PassContext.current() is default


def test_exiting_out_of_order_is_an_error() -> None:
    a, b = PassContext(), PassContext()
    a.__enter__()
    b.__enter__()
    with pytest.raises(RuntimeError, match="reverse order"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)


@pytest.mark.parametrize("kwargs", [
    {"opt_level": "3"}, {"required_pass": "FoldConstant"}, {"disabled_pass": [1]},
    {"instruments": Recorder("A", [])}, {"trace": 3},
])
def test_bad_arguments_are_type_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        PassContext(**kwargs)


def test_builtin_config_keys_are_registered_with_types() -> None:
    configs = PassContext.list_configs()
    expected = {
        "ir.enable_si_builder": "bool", "relay.frontend.fill_span": "bool",
        "te.keep_schedule_record": "bool", "relay.FuseOps.max_depth": "int",
        "relay.FuseOps.link_params": "bool", "relay.fallback_device_type": "int",
        "relay.backend.use_auto_scheduler": "bool", "tir.disable_vectorize": "bool",
        "testing.immutable_module": "bool",
    }
    for key, type_name in expected.items():
        assert configs[key]["type"] == type_name, key


def test_config_values_are_checked_and_read() -> None:
    ctx = PassContext(config={"relay.FuseOps.max_depth": 10, "tir.disable_vectorize": 1})
    assert ctx.config["relay.FuseOps.max_depth"] == 10
    assert ctx.config["tir.disable_vectorize"] is True
    assert ctx.get_config("relay.FuseOps.max_depth") == 10
    assert ctx.get_config("relay.FuseOps.link_params") is False  # registered default
    assert ctx.get_config("relay.FuseOps.link_params", "x") == "x"
    with pytest.raises(TypeError):
        ctx.config["relay.FuseOps.max_depth"] = 3  # type: ignore[index]


def test_unknown_config_key_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="relay.FuseOps.max_dept") as err:
        PassContext(config={"relay.FuseOps.max_dept": 3})
    assert "did you mean relay.FuseOps.max_depth" in str(err.value)
    with pytest.raises(ConfigError, match="no.such.key"):
        PassContext().get_config("no.such.key")


@pytest.mark.parametrize("key,value", [
    ("relay.FuseOps.max_depth", "10"), ("relay.FuseOps.max_depth", True),
    ("relay.FuseOps.max_depth", 2.5), ("tir.disable_vectorize", "yes"),
    ("tir.disable_vectorize", 2),
])
def test_wrong_config_type_names_the_key(key: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        PassContext(config={key: value})


def test_register_pass_config() -> None:
    register_pass_config("tests.transform.ratio", float, 0.5, "a test key")
    assert PassContext.list_configs()["tests.transform.ratio"]["default"] == 0.5
    assert PassContext(config={"tests.transform.ratio": 2}).config["tests.transform.ratio"] == 2.0
    register_pass_config("tests.transform.ratio", float, 0.25)  # same type: fine
    with pytest.raises(ConfigError, match="already registered"):
        register_pass_config("tests.transform.ratio", int)
    with pytest.raises(ConfigError):
        register_pass_config("tests.transform.bad_default", int, "x")


def test_frames_expose_nesting_index_and_parent_to_hooks() -> None:
    seen: list[tuple[str, int, int, int | None, tuple[str, ...]]] = []

    class Nesting(PassInstrument):
        def run_before_pass(self, mod, info):
            ctx = PassContext.current()
            frame = ctx.current_frame
            assert frame is not None and frame.info is info
            seen.append((info.name, ctx.pass_depth, frame.index, frame.parent_index,
                         tuple(i.name for i in ctx.pass_stack)))

    log: list[str] = []
    inner = Sequential([logging_pass("B", log)], name="inner")
    pipeline = Sequential([logging_pass("A", log), inner, logging_pass("C", log)], name="outer")
    with PassContext(instruments=[Nesting()]) as ctx:
        pipeline(make_module())
        assert ctx.current_frame is None and ctx.pass_depth == -1
        assert ctx.passes_run == ["A", "B", "inner", "C", "outer"]
    assert seen == [
        ("outer", 0, 0, None, ("outer",)),
        ("A", 1, 1, 0, ("outer", "A")),
        ("inner", 1, 2, 0, ("outer", "inner")),
        ("B", 2, 3, 2, ("outer", "inner", "B")),
        ("C", 1, 4, 0, ("outer", "C")),
    ]


def test_passes_record_statistics_on_their_frame() -> None:
    stats: dict[str, dict[str, float]] = {}

    @module_pass(opt_level=0)
    def counting(mod, ctx):
        ctx.add_stat("folded", 2)
        ctx.add_stat("folded")
        return mod

    class Stats(PassInstrument):
        def run_after_pass(self, mod, info):
            stats[info.name] = dict(PassContext.current().current_frame.stats)

    with PassContext(instruments=[Stats()]) as ctx:
        counting(make_module())
        ctx.add_stat("ignored")  # no running pass: no-op
    assert stats == {"counting": {"folded": 3}}


def test_threads_see_only_their_own_context_and_events() -> None:
    barrier = threading.Barrier(2)
    logs: dict[str, list[str]] = {"t1": [], "t2": []}
    errors: list[BaseException] = []

    def worker(tag: str) -> None:
        try:
            log = logs[tag]
            with PassContext(opt_level=1, instruments=[Recorder(tag, log)]) as ctx:
                barrier.wait(timeout=10)
                assert PassContext.current() is ctx
                for i in range(20):
                    logging_pass(f"{tag}-P{i}", log)(make_module())
                barrier.wait(timeout=10)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in logs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    for tag, log in logs.items():
        other = "t2" if tag == "t1" else "t1"
        assert not any(other in entry for entry in log)
        assert sum(e.startswith(f"pass {tag}-") for e in log) == 20
        assert log[0] == f"{tag} enter_pass_ctx" and log[-1] == f"{tag} exit_pass_ctx"
    assert PassContext.current().instruments == ()


def test_each_thread_has_its_own_default_context() -> None:
    main_default = PassContext.current()
    other: list[PassContext] = []
    t = threading.Thread(target=lambda: other.append(PassContext.current()))
    t.start()
    t.join()
    assert other and other[0] is not main_default

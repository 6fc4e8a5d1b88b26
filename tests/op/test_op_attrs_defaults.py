"""The attrs defaults table (engine/relay/op/attrs_defaults.py) against every registered op:
each op with attrs declares them, the parser fills what the text omits (as TVM's printer
omits defaults), and the Python constructors' defaults are the table's."""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

import pytest

from engine import relay
from engine.ir.attrs import normalize_attr
from engine.ir.errors import ParseError
from engine.ir.op import Op, list_ops
from engine.relay.op.attrs_defaults import REQUIRED, schema_of

OPS_WITH_ATTRS = [name for name in list_ops() if Op.get(name).info.attrs_type_key != "DictAttrs"]

# Where TVM's own Python API defaults differ from its C++ attrs defaults (text that omits
# the attribute means the C++ one): relay.nn.leaky_relu(alpha=0.01) vs 0.25,
# relay.nn.lrn(alpha=1e-5) vs 1e-4, relay.nn.batch_matmul(transpose_b=True) vs False,
# relay.image.resize2d(rounding_method="") vs "round", relay.topk(dtype="int32") vs a null
# DataType; and our zeros/ones default their dtype to float32 where TVM's require one.
PYTHON_DIFFERS = {
    ("nn.leaky_relu", "alpha"), ("nn.lrn", "alpha"), ("nn.batch_matmul", "transpose_b"),
    ("image.resize2d", "rounding_method"), ("dyn.image.resize2d", "rounding_method"),
    ("topk", "dtype"), ("dyn.topk", "dtype"), ("zeros", "dtype"), ("ones", "dtype"),
    ("dyn.zeros", "dtype"), ("dyn.ones", "dtype"),
}


def test_ops_with_attrs_exist() -> None:
    assert len(OPS_WITH_ATTRS) > 100


@pytest.mark.parametrize("name", OPS_WITH_ATTRS)
def test_every_op_with_attrs_declares_them(name: str) -> None:
    key = Op.get(name).info.attrs_type_key
    assert schema_of(key) is not None, f"{name}: {key} has no entry in attrs_defaults"


def _free_args(name: str) -> str:
    count = Op.get(name).num_inputs
    return ", ".join(f"%a{i}" for i in range(max(count, 1)))


@pytest.mark.parametrize("name", OPS_WITH_ATTRS)
def test_parser_fills_every_default(name: str) -> None:
    schema = schema_of(Op.get(name).info.attrs_type_key)
    assert schema is not None
    call = relay.parser.parse_expr(f"{name}({_free_args(name)})")
    expected = {k: v for k, v in schema.defaults.items() if v is not REQUIRED}
    assert dict(call.attrs) == expected
    assert call.attrs.type_key == schema.type_key


def test_parser_refuses_an_undeclared_attribute() -> None:
    with pytest.raises(ParseError, match=r"nn.softmax has no attribute 'axes' .*axis") as err:
        relay.parser.parse_expr("nn.softmax(%x, axes=1)")
    assert err.value.column == len("nn.softmax(%x, ") + 1


def _constructor(name: str) -> Any:
    """relay.nn.softmax for "nn.softmax", relay.dyn.nn.pad for "dyn.nn.pad"."""
    target: Any = relay
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target if inspect.isfunction(target) else None


def _canon(value: Any, like: Any) -> Any:
    """A signature default in the table's normal form: a scalar for an n-tuple field is
    broadcast (`strides=1` is `(1,)` for conv1d); None means "the attribute's default" (as in
    TVM's relay.cumsum(exclusive=None))."""
    value = normalize_attr(value)
    if value is None:
        return like
    if isinstance(like, tuple) and isinstance(value, int) and not isinstance(value, bool):
        return (value,) * len(like)
    return value


CONSTRUCTED = [n for n in OPS_WITH_ATTRS if _constructor(n) is not None]


def test_most_ops_have_a_constructor_of_their_name() -> None:
    assert len(CONSTRUCTED) > 0.8 * len(OPS_WITH_ATTRS)


@pytest.mark.parametrize("name", CONSTRUCTED)
def test_constructor_defaults_are_the_tables(name: str) -> None:
    schema = schema_of(Op.get(name).info.attrs_type_key)
    assert schema is not None
    ctor = _constructor(name)
    for param in inspect.signature(ctor).parameters.values():
        default = schema.defaults.get(param.name, REQUIRED)
        if (param.default is inspect.Parameter.empty or default is REQUIRED
                or (name, param.name) in PYTHON_DIFFERS):
            continue
        given = schema.fill({param.name: _canon(param.default, default)})[param.name]
        assert given == default, f"{name}({param.name}={param.default!r}): table {default!r}"


def _module_functions(module: ModuleType) -> list[str]:
    return [n for n, f in vars(module).items() if inspect.isfunction(f)]


def test_constructors_fill_defaults_they_do_not_pass() -> None:
    """A constructor that passes only some attributes still builds complete attrs."""
    call = relay.image.resize2d(relay.var("x", shape=(1, 1, 2, 2)), (4, 4))
    assert call.attrs.scales is None and call.attrs.antialias is False
    assert "softmax" in _module_functions(relay.nn)

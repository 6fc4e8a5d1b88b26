"""Hub topics carry the payloads static/src/hub.js declares: every `hub.emit(TOPIC.X, {...})`
in static/src has exactly the keys of X's typedef (required ones included), every handler
reads only declared fields, and every topic is both emitted and listened to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jsscan import call_args, matching, object_keys, split_top, typedefs

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "static" / "src"
HUB = (SRC / "hub.js").read_text()
EMIT = r"\bhub\.emit"
LISTEN = r"(?:\bhub\.on|\bthis\.listen)"


def _topics() -> dict[str, str]:
    """TOPIC key -> topic string."""
    block = HUB[HUB.index("export const TOPIC"):]
    block = block[:block.index("});")]
    return dict(re.findall(r"(\w+): \"([^\"]+)\"", block))


def _payloads() -> dict[str, tuple[str, bool]]:
    """topic string -> (payload type, nullable) from the TopicPayloads typedef."""
    block = re.search(r"@typedef \{\{(.*?)\}\} TopicPayloads", HUB, re.S)
    assert block, "hub.js declares no TopicPayloads typedef"
    found = {}
    for topic, tp in re.findall(r"\"([^\"]+)\": (.+?),\s*$", block.group(1), re.M):
        nullable = tp.endswith(" | null")
        found[topic] = (tp.removesuffix(" | null"), nullable)
    return found


TOPICS = _topics()
PAYLOADS = _payloads()
TYPEDEFS = typedefs(HUB)


def _sites(pattern: str) -> list[tuple[str, str, list[str]]]:
    """(where, TOPIC key, the call's other arguments) of every matching call in static/src."""
    sites = []
    for path in sorted(SRC.rglob("*.js")):
        for line, args in call_args(path.read_text(), pattern):
            m = re.fullmatch(r"TOPIC\.(\w+)", args[0]) if args else None
            if m:
                sites.append((f"{path.relative_to(ROOT)}:{line}", m.group(1), args[1:]))
    return sites


def _source_of(where: str) -> str:
    return (ROOT / where.rsplit(":", 1)[0]).read_text()


EMITS = _sites(EMIT)
HANDLERS = _sites(LISTEN)


def _typedef_of(key: str) -> tuple[object, bool]:
    tp, nullable = PAYLOADS[TOPICS[key]]
    return TYPEDEFS.get(tp), nullable


def test_every_topic_has_a_declared_payload():
    assert sorted(PAYLOADS) == sorted(TOPICS.values())
    for tp, _ in PAYLOADS.values():
        assert tp in TYPEDEFS or tp.startswith("import("), f"no typedef {tp}"


def test_every_topic_is_emitted_and_listened_to():
    assert {key for _, key, _ in EMITS} == set(TOPICS), "a topic nobody emits"
    assert {key for _, key, _ in HANDLERS} == set(TOPICS), "a topic nobody listens to"


@pytest.mark.parametrize("where,key,args", EMITS, ids=[w for w, _, _ in EMITS])
def test_emitted_payloads_have_the_declared_keys(where, key, args):
    assert key in TOPICS, f"{where}: unknown topic TOPIC.{key}"
    typedef, nullable = _typedef_of(key)
    payload = args[0]
    if payload == "null":
        assert nullable, f"{where}: TOPIC.{key} is not declared nullable"
        return
    if typedef is None or not payload.startswith("{"):
        return  # a class instance (RunModel), typed by its import
    keys = object_keys(payload)
    assert "..." not in keys, f"{where}: spread payloads cannot be checked"
    unknown = set(keys) - typedef.fields
    missing = typedef.required - set(keys)
    assert not unknown and not missing, (
        f"{where}: TOPIC.{key} payload vs typedef {typedef.name}: "
        f"undeclared {sorted(unknown)}, missing {sorted(missing)}")


def _reads(function: str, source: str, depth: int = 0) -> set[str]:
    """The payload fields a function `({ a, b }) => ...` / `m({ a, b }) {...}` or
    `(x) => ... x.a ...` reads, following `this.m(x, ...)` to methods of the same file."""
    if re.match(r"\(\s*\{", function):
        return set(object_keys(function[1:matching(function, 1) + 1]))
    m = re.match(r"\(?\s*([A-Za-z_$][\w$]*)\s*\)?\s*(=>|\{)", function)
    if m is None:
        return set()
    param, body = m.group(1), function[m.end():]
    reads = set(re.findall(rf"\b{param}\??\.(\w+)", body))
    for method in re.findall(rf"\bthis\.(\w+)\(\s*{param}\s*[,)]", body):
        reads |= _method_reads(method, source, depth)
    return reads


def _method_reads(method: str, source: str, depth: int) -> set[str]:
    """What a method of the file reads of its first parameter (one level of calls)."""
    m = re.search(rf"^\s*(?:async\s+)?{method}\(", source, re.M)
    if m is None or depth > 1:
        return set()
    params_end = matching(source, m.end() - 1)
    first = split_top(source[m.end():params_end])
    if not first:
        return set()
    body_start = source.index("{", params_end)
    body = source[body_start:matching(source, body_start) + 1]
    if first[0].startswith("{"):
        return set(object_keys(first[0]))
    return _reads(f"({first[0]}) {body}", source, depth + 1)


@pytest.mark.parametrize("where,key,args", HANDLERS, ids=[w for w, _, _ in HANDLERS])
def test_handlers_read_only_declared_fields(where, key, args):
    typedef, _ = _typedef_of(key)
    if typedef is None:
        return
    unknown = _reads(args[0], _source_of(where)) - typedef.fields
    assert not unknown, f"{where}: TOPIC.{key} handler reads undeclared {sorted(unknown)}"


def test_the_scanner_reads_nested_literals():
    text = 'hub.emit(TOPIC.COMPARE, { left: f(a, b), title: `#${x.y} ${"}"}`, captions: [1, 2] })'
    [(line, args)] = call_args(text, EMIT)
    assert (line, args[0]) == (1, "TOPIC.COMPARE")
    assert object_keys(args[1]) == ["left", "title", "captions"]
    assert split_top("a, {b, c}, 'd,e'") == ["a", "{b, c}", "'d,e'"]

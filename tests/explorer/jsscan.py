"""Just enough JavaScript scanning for the front end's drift tests: balanced brackets
(strings, template literals and comments skipped), top-level splitting, the keys of an
object literal, and the JSDoc typedefs of a file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

OPEN, CLOSE = "([{", ")]}"
QUOTES = "\"'`"


def skip_string(text: str, i: int) -> int:
    """`text[i]` opens a string or template literal: the index just after it ends."""
    quote = text[i]
    i += 1
    while text[i] != quote:
        if text[i] == "\\":
            i += 2
        elif quote == "`" and text.startswith("${", i):
            i = matching(text, i + 1) + 1
        else:
            i += 1
    return i + 1


def matching(text: str, i: int) -> int:
    """`text[i]` is an opening bracket: the index of the bracket that closes it."""
    depth = 0
    while True:
        c = text[i]
        if c in QUOTES:
            i = skip_string(text, i)
            continue
        if text.startswith("//", i):
            i = text.index("\n", i)
            continue
        if c in OPEN:
            depth += 1
        elif c in CLOSE:
            depth -= 1
            if depth == 0:
                return i
        i += 1


def split_top(text: str) -> list[str]:
    """`text` split at its top-level commas (empty parts dropped)."""
    parts, start, i = [], 0, 0
    while i < len(text):
        c = text[i]
        if c in QUOTES:
            i = skip_string(text, i)
            continue
        if c in OPEN:
            i = matching(text, i) + 1
            continue
        if c == ",":
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def call_args(text: str, pattern: str) -> list[tuple[int, list[str]]]:
    """(line, arguments) of each call whose callee matches `pattern` (a regex ending
    before the opening parenthesis)."""
    found = []
    for m in re.finditer(pattern + r"\(", text):
        paren = m.end() - 1
        args = split_top(text[paren + 1:matching(text, paren)])
        found.append((text.count("\n", 0, m.start()) + 1, args))
    return found


def object_keys(literal: str) -> list[str]:
    """The keys of an object literal `{ a, b: 1, "c": 2 }` (a `...spread` as `...`)."""
    keys = []
    for entry in split_top(literal.strip()[1:-1]):
        if entry.startswith("..."):
            keys.append("...")
            continue
        m = re.match(r"""["']?([A-Za-z_$][\w$]*)["']?\s*(?:[:=]|$)""", entry)
        if m is None:
            raise ValueError(f"cannot read the key of {entry!r}")
        keys.append(m.group(1))
    return keys


@dataclass
class Typedef:
    name: str
    required: set[str] = field(default_factory=set)
    optional: set[str] = field(default_factory=set)

    @property
    def fields(self) -> set[str]:
        return self.required | self.optional


def typedefs(text: str) -> dict[str, Typedef]:
    """The `@typedef {Object} Name` blocks of a file with their `@property` names."""
    found = {}
    for block in re.findall(r"/\*\*(.*?)\*/", text, re.S):
        m = re.search(r"@typedef \{Object\} (\w+)", block)
        if m is None:
            continue
        td = Typedef(m.group(1))
        for start in (p.end() for p in re.finditer(r"@property ", block)):
            name = block[matching(block, start) + 1:].split()[0]
            if name.startswith("["):
                td.optional.add(name.strip("[]"))
            else:
                td.required.add(name)
        found[td.name] = td
    return found

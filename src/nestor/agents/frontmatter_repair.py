"""Front matter that strict YAML rejects but Claude Code and OpenCode read: the rewrites that repair it.

Agent files shared online are written for tools that forgive their YAML. The two mistakes seen most
are an unquoted ``": "`` in a value (``description: Use this agent when: the user asks``) and a
multi-line description whose continuation lines are not indented. Each function here rewrites the
lines of front matter in one way and says what it changed; :mod:`nestor.agents.frontmatter` tries
them in order after a strict parse fails, and takes the first whose text parses:

1. :func:`quote_values`, as Claude Code does: a single-line value holding ``": "`` or a character
   YAML gives a meaning to is read as one double-quoted string, exactly as written;
2. :func:`block_values`, as OpenCode does: a value holding a colon (with the indented lines that
   continue it) is read as a literal block scalar (``key: |-``);
3. :func:`join_continuations`: lines that are not indented and start no key the format knows are
   read as part of the value above them (a block scalar), and the other values as in 1.

Every rewrite keeps, for each line it writes, the line of the original it came from, so problems
still point at the line the user wrote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

RepairKind: TypeAlias = Literal["quoted", "block", "joined", "ignored"]

_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(\S.*?))?[ \t]*$")
"""A ``key: value`` line at the top level (not indented, not a list item); the value may be absent."""
_SPECIAL = re.compile(r"[{}\[\]*&#!|>%@`]|: ")
"""What makes Claude Code quote a value: ``": "`` or a character YAML gives a meaning to."""
_BLOCK_HEADER = re.compile(r"^[|>][-+0-9]*[ \t]*(#.*)?$")


@dataclass(frozen=True, slots=True)
class Repair:
    """One change a repair made to front matter so that it parses, or the front matter ignored.

    Attributes:
        line: The first line (1-based, of the whole file) of the value changed.
        end_line: Its last line (the same line for a single-line value).
        key: The key whose value was changed ("" when the front matter was ignored).
        kind: ``quoted`` (read as a quoted string), ``block`` (read as a block scalar), ``joined``
            (lines that were not indented read as part of the value) or ``ignored`` (no repair
            helped: the front matter is ignored).
        detail: What made the value invalid (``it contains ': '``), or the YAML error.

    """

    line: int
    end_line: int
    key: str
    kind: RepairKind
    detail: str

    def describe(self) -> str:
        """What was done, in a sentence for a warning (without the file, line or key)."""
        fix = "nestor agents validate --fix writes it as a block scalar"
        if self.kind == "quoted":
            return f"invalid YAML ({self.detail}): read as one quoted string, as Claude Code does; {fix}"
        if self.kind == "block":
            return f"invalid YAML ({self.detail}): read as a block scalar (|-), as OpenCode does; {fix}"
        if self.kind == "joined":
            lines = (
                f"line {self.end_line} is"
                if self.end_line == self.line + 1
                else f"lines {self.line + 1}-{self.end_line} are"
            )
            return f"invalid YAML: {lines} not indented: read as part of this value; {fix}"
        return (
            f"invalid YAML ({self.detail}), even after the repairs Claude Code and OpenCode make: the "
            "front matter is ignored, so the agent is named after its file, has no description and "
            "gets only read-only tools; quote the values that hold ': ' or indent continuation lines"
        )


@dataclass(slots=True)
class Rewrite:
    """Front-matter lines after a repair.

    Attributes:
        lines: The rewritten lines.
        origin: For each rewritten line, the index of the original line it came from.
        repairs: What was changed, with lines counted from 0 in the original front matter.

    """

    lines: list[str] = field(default_factory=list[str])
    origin: list[int] = field(default_factory=list[int])
    repairs: list[Repair] = field(default_factory=list[Repair])

    def keep(self, line: str, index: int) -> None:
        """Keep one original line as it is."""
        self.lines.append(line)
        self.origin.append(index)

    def block(self, key: str, first: str, rest: Sequence[str], index: int) -> None:
        """Write ``key``'s value as a literal block scalar: ``first`` (on line ``index``) and ``rest``."""
        self.lines.append(f"{key}: |-")
        self.origin.append(index)
        for offset, text in enumerate((first, *rest)):
            self.lines.append(f"  {text}" if text.strip() else "")
            self.origin.append(index + offset)


Repairer: TypeAlias = Callable[[Sequence[str], Collection[str]], Rewrite]


def quote_values(lines: Sequence[str], keys: Collection[str]) -> Rewrite:
    """Claude Code's repair: each single-line value with ``": "`` or a special character, double-quoted.

    A value already quoted, a flow list or mapping (``[a, b]``), a block scalar's header, and a value
    continued on indented lines are left as they are. Backslashes and double quotes are escaped, so
    the string read is the value exactly as written.
    """
    del keys
    rewrite = Rewrite()
    for index in range(len(lines)):
        _keep_or_quote(rewrite, lines, index)
    return rewrite


def block_values(lines: Sequence[str], keys: Collection[str]) -> Rewrite:
    """OpenCode's repair: each plain value holding a colon, with its indented continuation, as ``key: |-``."""
    del keys
    rewrite = Rewrite()
    index = 0
    while index < len(lines):
        plain = _plain_value(lines[index])
        if plain is None or ":" not in plain[1]:
            rewrite.keep(lines[index], index)
            index += 1
            continue
        end = _value_end(lines, index, lambda line: not line.strip() or line[:1] in " \t")
        rewrite.block(*plain, [text.strip() for text in lines[index + 1 : end]], index)
        rewrite.repairs.append(Repair(index, end - 1, plain[0], "block", "a value holds ':'"))
        index = end
    return rewrite


def join_continuations(lines: Sequence[str], keys: Collection[str]) -> Rewrite:
    """Lines that are not indented and start no key in ``keys``, read as part of the value above them.

    The value and those lines become a literal block scalar; the other values are quoted as in
    :func:`quote_values`. With no ``keys``, any ``key:`` line starts a key.
    """
    rewrite = Rewrite()
    index = 0
    while index < len(lines):
        plain = _plain_value(lines[index])
        end = (
            index + 1 if plain is None else _value_end(lines, index, lambda line: not _starts_key(line, keys))
        )
        if plain is not None and any(text[:1] not in ("", " ", "\t") for text in lines[index + 1 : end]):
            rewrite.block(*plain, lines[index + 1 : end], index)
            rewrite.repairs.append(Repair(index, end - 1, plain[0], "joined", ""))
            index = end
            continue
        _keep_or_quote(rewrite, lines, index)
        index += 1
    return rewrite


REPAIRS: tuple[Repairer, ...] = (quote_values, block_values, join_continuations)
"""The repairs, in the order they are tried."""


def _keep_or_quote(rewrite: Rewrite, lines: Sequence[str], index: int) -> None:
    """Line ``index`` with its value double-quoted when it needs it (Claude Code's rule), else as it is."""
    plain = _plain_value(lines[index])
    special = None if plain is None or _continued(lines, index) else _SPECIAL.search(plain[1])
    if plain is None or special is None:
        rewrite.keep(lines[index], index)
        return
    key, value = plain
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    rewrite.keep(f'{key}: "{escaped}"', index)
    detail = f"the value contains {': ' if ': ' in value else special.group()!r}"
    rewrite.repairs.append(Repair(index, index, key, "quoted", detail))


def _plain_value(line: str) -> tuple[str, str] | None:
    """The key and value of a top-level ``key: value`` line whose value is plain text, else None."""
    match = _KEY_LINE.match(line)
    value = match.group(2) if match is not None else None
    if match is None or value is None or not _plain(value):
        return None
    return match.group(1), value


def _value_end(lines: Sequence[str], index: int, continues: Callable[[str], bool]) -> int:
    """Where the value on line ``index`` ends: after the lines that continue it, trailing blanks left out."""
    end = index + 1
    while end < len(lines) and continues(lines[end]):
        end += 1
    while end > index + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def _plain(value: str) -> bool:
    """True for a value written as plain text: not quoted, not a flow list or mapping, not a block header."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return False
    if (value[0], value[-1]) in (("[", "]"), ("{", "}")):
        return False
    return _BLOCK_HEADER.match(value) is None


def _continued(lines: Sequence[str], index: int) -> bool:
    """True when the line after ``index`` is indented text (the value goes on there)."""
    following = lines[index + 1] if index + 1 < len(lines) else ""
    return following[:1] in (" ", "\t") and bool(following.strip())


def _starts_key(line: str, keys: Collection[str]) -> bool:
    match = _KEY_LINE.match(line)
    return match is not None and (not keys or match.group(1) in keys)

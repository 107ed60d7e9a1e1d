"""Markdown with YAML front matter: ``---`` YAML ``---`` body, with the line of every key.

This is the one parser of every Markdown agent format nestor reads. It parses strictly first, then
repairs the YAML other tools forgive (:mod:`nestor.agents.frontmatter_repair`), so a file that loads
in Claude Code loads here too, and says what was repaired.

Readers need line numbers to point a user at the exact key that is wrong, so the YAML is composed
into nodes (which carry their position) and then constructed from those nodes: one parse gives both
the data and the lines. Lines are 1-based and count from the top of the file.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from nestor.agents.frontmatter_repair import REPAIRS, Repair
from nestor.core.errors import AgentFileError

_DELIMITER = "---"
_MAX_DEPTH = 32
MAX_VALUES = 10_000
"""The most values front matter may hold, counting each use of an alias (``*name``) in full: a few
lines of aliases of aliases (a "billion laughs") would otherwise expand to billions of values, and
readers spend time on each value (an agent's front matter holds a few dozen)."""
_TOO_DEEP = f"nests lists or mappings more than {_MAX_DEPTH} levels deep"
_TOO_MANY = f"holds more than {MAX_VALUES:,} values once its aliases expand"
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"  # libyaml stops there, before our own check
# libyaml's loader, where PyYAML was built with it, composes the same nodes (with their lines) about
# nine times faster than the pure-Python one: a repository's agent files are parsed before the first
# request, so this is start-up time.
_LOADER: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """The parsed front matter of one file and the body after it.

    Attributes:
        data: The top-level mapping (empty when the file has no front matter).
        body: The text after the closing ``---``, stripped of surrounding blank space.
        key_lines: The line of each top-level key.
        item_lines: For keys whose value is a list or a mapping: the line of each item (by index) or
            of each sub-key (by name).
        present: False when the file has no front matter at all.
        values: How many values (keys, items, scalars, aliases counted in full) it holds: readers
            spend time on each, so a registry counts them against its limits.
        repairs: What was changed so that invalid YAML parses (each value quoted, made a block
            scalar or joined with the lines after it), or the one reason it was ignored.

    """

    data: dict[str, Any]
    body: str
    key_lines: Mapping[str, int] = field(default_factory=dict[str, int])
    item_lines: Mapping[str, Mapping[int | str, int]] = field(
        default_factory=dict[str, Mapping[int | str, int]]
    )
    present: bool = True
    values: int = 0
    repairs: tuple[Repair, ...] = ()

    @property
    def ignored(self) -> Repair | None:
        """Why the front matter was ignored (YAML no repair could read), or None when it was read."""
        return next((repair for repair in self.repairs if repair.kind == "ignored"), None)

    def line(self, key: str | None = None, item: int | str | None = None) -> int:
        """The line of ``key`` (or of one of its items); line 1 when unknown."""
        if key is None:
            return 1
        key_line = self.key_lines.get(key, 1)
        if item is None:
            return key_line
        return self.item_lines.get(key, {}).get(item, key_line)


def parse_front_matter(text: str, path: Path, *, keys: Collection[str] = ()) -> FrontMatter:
    """Split ``text`` into front matter and body and parse the YAML, repairing it as Claude Code would.

    A file that does not start with ``---`` has no front matter: all of it is the body. YAML that a
    strict parse rejects is repaired the ways :mod:`nestor.agents.frontmatter_repair` lists, and each
    change is in :attr:`FrontMatter.repairs`; when no repair helps, the front matter is ignored
    (:attr:`FrontMatter.ignored` says why) and the body kept, as Claude Code keeps it.

    Args:
        text: The file's text.
        path: The file, for errors.
        keys: The keys its format knows: a line that is not indented and starts none of them is read
            as the continuation of the value above it (with none, any ``key:`` line starts a key).

    Raises:
        AgentFileError: The front matter is never closed, is not a mapping, repeats a key, or is
            larger or deeper than the limits. The error names the file, the line and the key.

    """
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if lines[0].rstrip() != _DELIMITER:
        return FrontMatter(data={}, body=text.strip(), present=False)
    closing = next((i for i in range(1, len(lines)) if lines[i].rstrip() == _DELIMITER), None)
    if closing is None:
        raise AgentFileError(
            f"{path}:1: the front matter opened by '---' on line 1 is never closed",
            hint="end the YAML front matter with a line containing only '---'",
            path=str(path),
            line=1,
        )
    body = "\n".join(lines[closing + 1 :]).strip()
    return _parse_yaml(lines[1:closing], path, first_line=2, body=body, keys=keys)


def _parse_yaml(
    lines: Sequence[str], path: Path, *, first_line: int, body: str, keys: Collection[str]
) -> FrontMatter:
    """Parse strictly, then with each repair in turn; ignore the front matter when none parses."""
    try:
        return _compose("\n".join(lines), path, body, lambda index: first_line + index)
    except yaml.YAMLError as strict:
        failure = strict
    for repair in REPAIRS:
        rewrite = repair(lines, keys)
        if not rewrite.repairs:
            continue
        try:
            document = _compose("\n".join(rewrite.lines), path, body, _lines_of(first_line, rewrite.origin))
        except yaml.YAMLError:
            continue
        except AgentFileError as exc:
            if exc.key:  # a repeated key: the repair read a line of text as a key; try the next one
                continue
            raise
        repairs = tuple(
            Repair(first_line + fix.line, first_line + fix.end_line, fix.key, fix.kind, fix.detail)
            for fix in rewrite.repairs
        )
        return replace(document, repairs=repairs)
    line, cause = first_line, str(failure)
    if isinstance(failure, yaml.MarkedYAMLError):
        mark = failure.problem_mark or failure.context_mark
        line += mark.line if mark is not None else 0
        cause = failure.problem or failure.context or cause
    return FrontMatter(data={}, body=body, repairs=(Repair(line, line, "", "ignored", cause),))


def _lines_of(first_line: int, origin: Sequence[int]) -> Callable[[int], int]:
    """The file's line of each line of a rewrite (the line of the original it came from)."""
    return lambda index: first_line + origin[min(index, len(origin) - 1)]


def _compose(yaml_text: str, path: Path, body: str, line_of: Callable[[int], int]) -> FrontMatter:
    """Parse ``yaml_text`` strictly; ``line_of`` turns a line of it (from 0) into the file's line.

    Raises:
        yaml.YAMLError: The text is not valid YAML.
        AgentFileError: It is, but breaks a limit, is not a mapping or repeats a key.

    """
    first_line = line_of(0)
    loader = _LOADER(yaml_text)
    try:
        node = loader.get_single_node()
        values = 0 if node is None else check_size(node, _node_children, path, first_line)
        data: object = loader.construct_document(node) if node is not None else None
    except RecursionError:
        raise too_deep_error(path, first_line) from None
    except yaml.MarkedYAMLError as exc:
        if _LIBYAML_TOO_DEEP in (exc.problem or ""):
            raise too_deep_error(path, first_line) from None
        raise
    finally:
        loader.dispose()
    if node is None:
        return FrontMatter(data={}, body=body)
    if not isinstance(node, MappingNode) or not isinstance(data, dict):
        line = line_of(node.start_mark.line)
        raise AgentFileError(
            f"{path}:{line}: the front matter must be a mapping of keys to values, not a {_kind(node)}",
            hint="write one 'key: value' per line",
            path=str(path),
            line=line,
        )
    key_lines, item_lines = _positions(node, path, line_of)
    return FrontMatter(
        data={str(key): value for key, value in data.items()},  # pyright: ignore[reportUnknownVariableType]
        body=body,
        key_lines=key_lines,
        item_lines=item_lines,
        values=values,
    )


Item = TypeVar("Item")


def check_size(root: Item, children: Callable[[Item], Iterable[Item]], path: Path, first_line: int) -> int:
    """Count the values under ``root``; refuse more than :data:`MAX_VALUES` or deeper than 32 levels.

    Args:
        root: The document's root (a YAML node, or the data of a JSON document).
        children: The values directly inside one value (none for a scalar).
        path: The file, for the error.
        first_line: The line the document starts on, for the error.

    Raises:
        AgentFileError: The document nests too deeply or holds too many values.

    """
    pending: list[tuple[Item, int]] = [(root, 1)]
    count = 0
    while pending:
        item, depth = pending.pop()
        count += 1
        if count > MAX_VALUES:
            raise _too_large(path, first_line, _TOO_MANY)
        if depth > _MAX_DEPTH:
            raise too_deep_error(path, first_line)
        pending.extend((child, depth + 1) for child in children(item))
    return count


def _node_children(node: Node) -> Iterable[Node]:
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [item for pair in node.value for item in pair]
    return ()


def too_deep_error(path: Path, first_line: int) -> AgentFileError:
    """The error for a document that nests lists or mappings more than 32 levels deep."""
    return _too_large(path, first_line, _TOO_DEEP)


def _too_large(path: Path, first_line: int, what: str) -> AgentFileError:
    return AgentFileError(
        f"{path}:{first_line}: the front matter {what}",
        hint="an agent's front matter is a few plain 'key: value' lines: fix or remove the file",
        path=str(path),
        line=first_line,
    )


def _positions(
    node: MappingNode, path: Path, line_of: Callable[[int], int]
) -> tuple[dict[str, int], dict[str, dict[int | str, int]]]:
    key_lines: dict[str, int] = {}
    item_lines: dict[str, dict[int | str, int]] = {}
    for key_node, value_node in node.value:
        line = line_of(key_node.start_mark.line)
        key = str(key_node.value) if isinstance(key_node, ScalarNode) else "?"
        if key in key_lines:
            raise AgentFileError(
                f"{path}:{line}: {key}: duplicate key (first on line {key_lines[key]})",
                hint="keep one of the two entries",
                path=str(path),
                line=line,
                key=key,
            )
        key_lines[key] = line
        item_lines[key] = _item_lines(value_node, line_of)
    return key_lines, item_lines


def _item_lines(node: Node, line_of: Callable[[int], int]) -> dict[int | str, int]:
    if isinstance(node, SequenceNode):
        return {index: line_of(item.start_mark.line) for index, item in enumerate(node.value)}
    if isinstance(node, MappingNode):
        return {
            str(key.value): line_of(key.start_mark.line)
            for key, _ in node.value
            if isinstance(key, ScalarNode)
        }
    return {}


def _kind(node: Node) -> str:
    if isinstance(node, SequenceNode):
        return "list"
    return "single value" if isinstance(node, ScalarNode) else "mapping"

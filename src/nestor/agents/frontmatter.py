"""Markdown with YAML front matter: ``---`` YAML ``---`` body, with the line of every key.

Readers need line numbers to point a user at the exact key that is wrong, so the YAML is composed
into nodes (which carry their position) and then constructed from those nodes: one parse gives both
the data and the lines. Lines are 1-based and count from the top of the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

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

    """

    data: dict[str, Any]
    body: str
    key_lines: Mapping[str, int] = field(default_factory=dict[str, int])
    item_lines: Mapping[str, Mapping[int | str, int]] = field(
        default_factory=dict[str, Mapping[int | str, int]]
    )
    present: bool = True
    values: int = 0

    def line(self, key: str | None = None, item: int | str | None = None) -> int:
        """The line of ``key`` (or of one of its items); line 1 when unknown."""
        if key is None:
            return 1
        key_line = self.key_lines.get(key, 1)
        if item is None:
            return key_line
        return self.item_lines.get(key, {}).get(item, key_line)


def parse_front_matter(text: str, path: Path) -> FrontMatter:
    """Split ``text`` into front matter and body and parse the YAML.

    A file that does not start with ``---`` has no front matter: all of it is the body.

    Raises:
        AgentFileError: The front matter is never closed, is not valid YAML, is not a mapping, or
            repeats a key. The error names the file, the line and the key.

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
    yaml_text = "\n".join(lines[1:closing])
    body = "\n".join(lines[closing + 1 :]).strip()
    return _parse_yaml(yaml_text, path, first_line=2, body=body)


def _parse_yaml(yaml_text: str, path: Path, *, first_line: int, body: str) -> FrontMatter:
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
        mark = exc.problem_mark or exc.context_mark
        line = first_line + (mark.line if mark is not None else 0)
        cause = exc.problem or exc.context or "invalid YAML"
        raise AgentFileError(
            f"{path}:{line}: invalid YAML: {cause}",
            hint="fix the YAML syntax (quote values that contain ': ' or start with a special character)",
            path=str(path),
            line=line,
        ) from exc
    except yaml.YAMLError as exc:
        raise AgentFileError(
            f"{path}:{first_line}: invalid YAML: {exc}", path=str(path), line=first_line
        ) from exc
    finally:
        loader.dispose()
    if node is None:
        return FrontMatter(data={}, body=body)
    if not isinstance(node, MappingNode) or not isinstance(data, dict):
        line = first_line + node.start_mark.line
        raise AgentFileError(
            f"{path}:{line}: the front matter must be a mapping of keys to values, not a {_kind(node)}",
            hint="write one 'key: value' per line",
            path=str(path),
            line=line,
        )
    key_lines, item_lines = _positions(node, path, first_line)
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
    node: MappingNode, path: Path, first_line: int
) -> tuple[dict[str, int], dict[str, dict[int | str, int]]]:
    key_lines: dict[str, int] = {}
    item_lines: dict[str, dict[int | str, int]] = {}
    for key_node, value_node in node.value:
        line = first_line + key_node.start_mark.line
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
        item_lines[key] = _item_lines(value_node, first_line)
    return key_lines, item_lines


def _item_lines(node: Node, first_line: int) -> dict[int | str, int]:
    if isinstance(node, SequenceNode):
        return {index: first_line + item.start_mark.line for index, item in enumerate(node.value)}
    if isinstance(node, MappingNode):
        return {
            str(key.value): first_line + key.start_mark.line
            for key, _ in node.value
            if isinstance(key, ScalarNode)
        }
    return {}


def _kind(node: Node) -> str:
    if isinstance(node, SequenceNode):
        return "list"
    return "single value" if isinstance(node, ScalarNode) else "mapping"

"""``nestor agents validate --fix``: an agent file's repaired values written back as block scalars.

A file whose front matter loads only after a repair (:mod:`nestor.agents.frontmatter_repair`) is
rewritten so that it parses strictly, here and in every other tool: each repaired value becomes a
literal block scalar (``description: |-``) holding the text nestor read, and the rest of the file is
left byte for byte. The new text is parsed again before it is returned, and must read the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from nestor.agents.readers import READERS


class _LiteralDumper(yaml.SafeDumper):
    """Writes every string as a literal block scalar where YAML allows one (else double-quoted)."""


def _literal(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")


_LiteralDumper.add_representer(str, _literal)


def fixed_text(text: str, path: Path, ecosystem: str) -> str | None:
    """``text`` with each value its front matter needed repaired as a block scalar.

    Args:
        text: The agent file's text.
        path: The file, for the parser's errors.
        ecosystem: Its format (one of :data:`nestor.agents.readers.ECOSYSTEMS` with Markdown files).

    Returns:
        The new text, or None when nothing was repaired, when the front matter was ignored (no
        repair read it: only the user can say what it meant), or when the rewrite would not read
        the same.

    Raises:
        AgentFileError: The front matter is broken in a way no repair touches (never closed, a
            repeated key, past the limits).

    """
    parse = READERS[ecosystem][0]
    document = parse(text, path)
    repairs = [repair for repair in document.repairs if repair.kind != "ignored"]
    if not repairs or document.ignored is not None:
        return None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    for repair in sorted(repairs, key=lambda repair: repair.line, reverse=True):
        value: Any = document.data.get(repair.key)
        if not isinstance(value, str):
            return None
        lines[repair.line - 1 : repair.end_line] = _block_scalar(repair.key, value)
    fixed = "\n".join(lines)
    again = parse(fixed, path)
    if again.repairs or again.data != document.data:
        return None
    return bom + fixed.replace("\n", newline)


def _block_scalar(key: str, value: str) -> list[str]:
    """``key: |-`` and the indented lines of ``value`` (double-quoted where a block cannot hold it)."""
    written = yaml.dump(value, Dumper=_LiteralDumper, allow_unicode=True, width=1_000_000).rstrip("\n")
    first, *rest = written.removesuffix("\n...").split("\n")
    return [f"{key}: {first}", *rest]

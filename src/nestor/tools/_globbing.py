"""Glob patterns with ``.gitignore``-like rules, shared by the file tools.

One matcher serves ``glob``, ``grep``'s ``include`` and ``ls``'s ``ignore``, so the ripgrep path
and the pure-Python fallback agree on what a pattern means:

- ``*`` matches within one path segment, ``?`` one character, ``[abc]`` / ``[!abc]`` a class,
  ``{a,b}`` either alternative, ``**`` any number of directories.
- A pattern without a ``/`` matches a file name at any depth (``*.py`` finds ``src/a/b.py``);
  a pattern with a ``/`` is anchored at the search directory (``src/*.py``).
- A trailing ``/`` means everything inside (``docs/`` matches every path under any ``docs``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from nestor.core.errors import ToolError


@dataclass(frozen=True, slots=True)
class GlobPattern:
    """A compiled glob, matched against ``/``-separated paths relative to the search directory.

    Attributes:
        source: The pattern as given.
        regex: The compiled regular expression, matched against the whole relative path.

    """

    source: str
    regex: re.Pattern[str]

    def matches(self, relative_path: str) -> bool:
        """Return True when ``relative_path`` (``/``-separated) matches the pattern."""
        return self.regex.fullmatch(relative_path) is not None


def compile_glob(pattern: str) -> GlobPattern:
    """Compile ``pattern``; raise :class:`ToolError` with the reason when it is malformed."""
    return _compile_cached(pattern)


@lru_cache(maxsize=256)
def _compile_cached(pattern: str) -> GlobPattern:
    body = pattern.strip()
    while body.startswith("./"):
        body = body[2:]
    everything_inside = body.endswith("/")
    body = body.rstrip("/")
    if not body:
        raise ToolError(f"The glob pattern {pattern!r} matches nothing useful; give one such as '**/*.py'.")
    if "/" not in body:
        body = "**/" + body
    body = body.lstrip("/")
    if everything_inside:
        body += "/**"
    regex = _translate(body, pattern)
    return GlobPattern(source=pattern, regex=re.compile(regex, re.DOTALL))


def _translate(body: str, original: str) -> str:
    parts: list[str] = []
    depth = 0
    index = 0
    while index < len(body):
        char = body[index]
        at_segment_start = index == 0 or body[index - 1] == "/"
        if body.startswith("**", index):
            end = index + 2
            if at_segment_start and body.startswith("/", end):
                parts.append("(?:.*/)?")
                index = end + 1
            elif at_segment_start and end == len(body):
                parts.append(".*")
                index = end
            else:
                parts.append("[^/]*")
                index = end
            continue
        if char == "*":
            parts.append("[^/]*")
        elif char == "?":
            parts.append("[^/]")
        elif char == "[":
            class_end = _find_class_end(body, index)
            if class_end < 0:
                parts.append(re.escape(char))
            else:
                parts.append(_translate_class(body[index + 1 : class_end]))
                index = class_end
        elif char == "{":
            depth += 1
            parts.append("(?:")
        elif char == "}" and depth > 0:
            depth -= 1
            parts.append(")")
        elif char == "," and depth > 0:
            parts.append("|")
        elif char == "\\" and index + 1 < len(body):
            index += 1
            parts.append(re.escape(body[index]))
        else:
            parts.append(re.escape(char))
        index += 1
    if depth:
        raise ToolError(
            f"The glob pattern {original!r} has an unclosed '{{'; close it (e.g. '*.{{ts,tsx}}') "
            "or escape it as '\\{'."
        )
    return "".join(parts)


def _find_class_end(body: str, start: int) -> int:
    index = start + 1
    if index < len(body) and body[index] in "!^":
        index += 1
    if index < len(body) and body[index] == "]":
        index += 1
    while index < len(body):
        if body[index] == "]":
            return index
        if body[index] == "/":
            return -1
        index += 1
    return -1


def _translate_class(inner: str) -> str:
    negated = inner[:1] in ("!", "^")
    if negated:
        inner = inner[1:]
    escaped = inner.replace("\\", "\\\\").replace("[", "\\[")
    if escaped.startswith("]"):
        escaped = "\\" + escaped
    if negated:
        return f"[^/{escaped}]"
    return f"(?!/)[{escaped}]"


def basename_prefilter(pattern: GlobPattern) -> str | None:
    """Return a glob every matching file's name must match, for ripgrep to pre-filter with.

    ripgrep's ``--glob`` overrides ``.gitignore``, but its file types do not, so the tools hand
    ripgrep this name-only glob as a type and then apply the full pattern themselves. Returns None
    when no such glob can be derived safely (e.g. the last segment is ``**``).
    """
    source = pattern.source.strip()
    if source.endswith("/"):
        return None
    head, _, last = source.rpartition("/")
    if not last or "**" in last or "\\" in source:
        return None
    if last.count("{") != last.count("}") or head.count("{") != head.count("}"):
        return None
    return last

"""Whether a hook's matcher matches, read as Claude Code reads it.

``*``, an empty string or no matcher match everything; a matcher of letters, digits, ``_`` and
``|`` alone is an exact name or a ``|`` list of exact names; anything else is a regular expression
searched in the name. A value matches when any of its names does (a tool's nestor name and its
Claude Code name: ``bash`` and ``Bash``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

_PLAIN = re.compile(r"[A-Za-z0-9_|]+")


def matches(matcher: str | None, names: Sequence[str]) -> bool:
    """Whether ``matcher`` matches any of ``names``; an invalid regular expression matches nothing."""
    if matcher is None or matcher in ("", "*"):
        return True
    if _PLAIN.fullmatch(matcher):
        wanted = set(matcher.split("|"))
        return any(name in wanted for name in names)
    pattern = _compiled(matcher)
    return pattern is not None and any(pattern.search(name) for name in names)


@lru_cache(maxsize=256)
def _compiled(matcher: str) -> re.Pattern[str] | None:
    try:
        return re.compile(matcher)
    except re.error:
        return None

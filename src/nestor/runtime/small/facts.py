"""Facts nestor states itself under a small model's answer: where names are defined, what cited lines are.

A 1.5B model reads the right evidence and still names the wrong thing: it cites ``timed.py:141``
without the method that line is in, or calls a function defined in one file "defined" in another.
These lines come from nestor's own index of the project (:mod:`.symbols`), never from the model,
and follow its words so that a reader can check them.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from nestor.runtime.small.intent import Intent
from nestor.runtime.small.symbols import Symbol, SymbolIndex

MAX_WHERE = 3
"""Definitions of one name listed at most under an answer to a "where" question."""
MAX_CITED = 3
"""Cited lines whose enclosing function is named, at most."""
_CITED_LINE = re.compile(r"(?<![\w./-])([\w./-]+\.py):(\d+)\b")


def is_test_path(path: str) -> bool:
    """Whether ``path`` is a test file by the usual conventions (``test_*.py``, ``tests/``...)."""
    name = PurePosixPath(path).name
    return (
        name.startswith("test_") or name.endswith("_test.py") or "tests/" in path or path.startswith("test/")
    )


def where_defined(intent: Intent, symbols: SymbolIndex) -> str:
    """Where the names the question wrote are defined (outside the tests), as nestor's index says."""
    rows: list[str] = []
    for term in intent.terms:
        if not term.exact or term.common or term.qualifier or term.is_file:
            continue
        found = [
            symbol
            for symbol in symbols.definitions(term.text)
            if symbol.kind != "module" and not is_test_path(symbol.path)
        ]
        if term.owner is not None:  # Version.parse: the method of Version, if there is one
            owned = [symbol for symbol in found if symbol.owner == term.owner]
            found = owned or found
        if 0 < len(found) <= MAX_WHERE:
            places = ", ".join(f"{symbol.path}:{symbol.line}" for symbol in found)
            owner = f"{found[0].owner}." if found[0].owner and len(found) == 1 else ""
            rows.append(f"`{owner}{term.text}`: {places}")
    return "Defined at: " + "; ".join(rows) + "." if rows else ""


def cited_functions(answer: str, symbols: SymbolIndex) -> str:
    """The function or method each ``path:line`` the answer cites is in, when the answer does not name it.

    A cited path may be shorter than the project's (``pkg/mod.py`` for ``src/pkg/mod.py``) when it
    ends exactly one indexed file's path. A line on a ``def`` itself, or outside every function, adds
    nothing.
    """
    rows: list[str] = []
    for match in _CITED_LINE.finditer(answer):
        cited, line = match.group(1), int(match.group(2))
        path = _indexed_path(cited, symbols)
        if path is None:
            continue
        function = _innermost_function(symbols.in_file(path), line)
        if function is None or function.line == line:
            continue
        name = f"{function.owner}.{function.name}" if function.owner else function.name
        row = f"`{cited}:{line}` is in `{name}` ({path}:{function.line})"
        if re.search(rf"\b{re.escape(function.name)}\b", answer) is None and row not in rows:
            rows.append(row)
        if len(rows) == MAX_CITED:
            break
    return "Lines cited: " + "; ".join(rows) + "." if rows else ""


def _indexed_path(cited: str, symbols: SymbolIndex) -> str | None:
    cited = cited.removeprefix("./")
    if symbols.in_file(cited):
        return cited
    ending = [path for path in symbols.paths() if path.endswith("/" + cited)]
    return ending[0] if len(ending) == 1 else None


def _innermost_function(defined: list[Symbol], line: int) -> Symbol | None:
    around = [
        symbol
        for symbol in defined
        if symbol.kind in ("function", "method") and symbol.line <= line <= symbol.end
    ]
    return max(around, key=lambda symbol: symbol.line, default=None)

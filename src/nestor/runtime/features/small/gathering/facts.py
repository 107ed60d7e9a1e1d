"""Facts nestor states itself under a small model's answer: where names are, what values they hold.

A 1.5B model reads the right evidence and still gets the answer wrong: it cites ``timed.py:141``
without the method that line is in, names ``EXIT_ERROR`` without its value, or quotes a README's
example for a default.
These lines come from nestor's own index of the project (:mod:`.symbols`), never from the model,
and follow its words so that a reader can check them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from nestor.runtime.features.small.gathering.evidence import Region
from nestor.runtime.features.small.gathering.project import is_test_path
from nestor.runtime.features.small.gathering.ranking import asks_for_exception, term_pattern
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.symbols import Symbol, SymbolIndex
from nestor.runtime.features.small.understanding.intent import Intent

MAX_WHERE = 3
"""Definitions of one name listed at most under an answer to a "where" question."""
MAX_ANSWER_NAMES = 3
"""Functions, methods and classes the answer names whose place is listed, at most."""
MAX_CITED = 3
"""Cited lines whose enclosing function is named, at most."""
MAX_DEFAULTS = 3
"""Constants a question about a default names, at most, for them to be listed (more: too vague)."""
MAX_VALUES = 6
"""Assignments listed at most under an answer."""
MAX_ASSIGNMENT_CHARS = 160
"""A longer assignment is not listed: a table or a long string says nothing at a glance."""
MAX_RAISED = 2
"""Raise statements listed at most under an answer to a question about an exception."""
MAX_RAISED_CHARS = 240
"""A raise statement (its exception and message) is cut at this length."""
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx")
_THROW = re.compile(r"^\s*throw\s+(.+?);?\s*$")
_JS_GUARD = re.compile(r"^\s*(?:}\s*)?(?:else\s+)?if\s*\((.*)\)\s*{?\s*$")
_SOURCE_PATH = r"[\w./-]+\.(?:py|js|mjs|cjs|jsx|ts|tsx|rs|go)"
_CITED_LINE = re.compile(rf"(?<![\w./-])({_SOURCE_PATH}):(\d+)\b")
_CITED_LINES = re.compile(rf"(?<![\w./-])({_SOURCE_PATH})`?[^.\n:]{{0,40}}?\blines?\s+(\d+)", re.IGNORECASE)
"""A file, then "at lines 28-47" in the same clause: the form small models cite in."""
_ASKS_DEFAULT = re.compile(
    r"\bdefaults?\b|\b(?:if|when)\s+(?:i|you|we)\s+(?:have|pass|give|set)\s+no\b|"
    r"\b(?:don'?t|do\s+not|never)\s+(?:pass|set|give|configure)\b|\bwithout\b",
    re.IGNORECASE,
)
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_CONSTANT_IN_TEXT = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
"""A Python identifier (ASCII), as the harness looks for names in questions and answers."""


def where_defined(intent: Intent, symbols: SymbolIndex, answer: str = "") -> str:
    """Where the names the question wrote are defined (outside the tests), as nestor's index says.

    Then where the functions, methods and classes the answer writes as code are, at most
    :data:`MAX_ANSWER_NAMES` of them: a 1.5B model answers "in the `load_payload` method" and
    leaves out the class it belongs to.
    """
    rows: list[str] = []
    listed: set[str] = set()
    for term in intent.terms:
        if not term.exact or term.common or term.qualifier or term.is_file:
            continue
        listed.add(term.text)
        found = [
            symbol
            for symbol in symbols.definitions(term.text)
            if symbol.kind != "module" and not is_test_path(symbol.path)
        ]
        if term.owner is not None:  # Version.parse: the method of Version, if there is one
            owned = [symbol for symbol in found if symbol.owner == term.owner]
            found = owned or found
        if 0 < len(found) <= MAX_WHERE:
            rows.append(_where_row(term.text, found))
    answered: list[str] = []
    for name in dict.fromkeys(_code_names(answer)):
        found = [
            symbol
            for symbol in symbols.definitions(name)
            if symbol.kind in ("function", "method", "class") and not is_test_path(symbol.path)
        ]
        if name not in listed and 0 < len(found) <= MAX_WHERE and len(answered) < MAX_ANSWER_NAMES:
            answered.append(_where_row(name, found))
    rows += answered
    return "Defined at: " + "; ".join(rows) + "." if rows else ""


def _where_row(name: str, found: list[Symbol]) -> str:
    """``Class.name: path:line``; for several definitions each place says its class, if any."""
    if len(found) == 1:
        owner = f"{found[0].owner}." if found[0].owner else ""
        return f"`{owner}{name}`: {found[0].path}:{found[0].line}"
    places = (
        f"{symbol.path}:{symbol.line}" + (f" (`{symbol.owner}`)" if symbol.owner else "") for symbol in found
    )
    return f"`{name}`: " + ", ".join(places)


def _code_names(text: str) -> list[str]:
    """The identifiers in the code spans (backticks) of ``text``, in order."""
    return [name for span in _CODE_SPAN.findall(text) for name in IDENTIFIER.findall(span)]


def asks_for_a_default(prompt: str) -> bool:
    """Whether the prompt asks what happens by default (``default``, "if I have no", "without")."""
    return _ASKS_DEFAULT.search(prompt) is not None


def values(
    answer: str,
    intent: Intent,
    symbols: SymbolIndex,
    reader: ProjectReader,
    *,
    default: bool,
    regions: Sequence[Region] = (),
) -> str:
    """The assignments of the module-level names the question or the answer writes as code, and of constants.

    A 1.5B model names ``EXIT_ERROR`` without its value, explains ``_int64_struct.pack`` without
    the format it packs with, passes over "is `toolz.comp` an alias?", and asked for a default
    quotes a README's example as readily as the constant the code uses. So the one-line assignment
    (outside the tests) of each module-level name the question or the answer writes as code, and
    of each ``UPPER_CASE`` constant the answer names, follows it, unless the answer quotes it; with
    ``default``, so do those of the constants the question's words name (:func:`_named_by`), when
    there are at most :data:`MAX_DEFAULTS` of them. An attribute the answer writes as code, set in
    the ``regions`` shown (``self.always_from_toolz = {toolz.pipe}``), follows too: "it defines
    `always_from_toolz`" said nothing of what it holds.
    """
    written = [
        term.text
        for term in intent.terms
        if term.exact and not (term.prose or term.qualifier or term.is_file)
    ]
    constants = sorted({name for name in _CONSTANT_IN_TEXT.findall(answer) if name in symbols})
    named = list(dict.fromkeys([*constants, *(name for name in _code_names(answer) if name in symbols)]))
    asked = (
        [name for name in sorted(symbols.names()) if _named_by(name, set(intent.words))] if default else []
    )
    rows: list[str] = []
    for name in [*written, *named, *(asked if len(asked) <= MAX_DEFAULTS else [])]:
        for symbol in symbols.definitions(name):
            if symbol.kind != "variable" or symbol.owner is not None or symbol.line != symbol.end:
                continue
            lines = (reader.read_text(symbol.path) or "").splitlines()
            if is_test_path(symbol.path) or symbol.line > len(lines):
                continue
            assignment = lines[symbol.line - 1].strip()
            row = f"`{assignment}` ({symbol.path}:{symbol.line})"
            if len(assignment) <= MAX_ASSIGNMENT_CHARS and assignment not in answer and row not in rows:
                rows.append(row)
    for path, line, assignment in _attributes_set(regions, reader, set(_code_names(answer))):
        row = f"`{assignment}` ({path}:{line})"
        if len(assignment) <= MAX_ASSIGNMENT_CHARS and assignment not in answer and row not in rows:
            rows.append(row)
    return "Values: " + "; ".join(rows[:MAX_VALUES]) + "." if rows else ""


def _attributes_set(
    regions: Sequence[Region], reader: ProjectReader, names: set[str]
) -> list[tuple[str, int, str]]:
    """``(path, line, assignment)`` of each ``self.<name> = ...`` of ``names`` in the Python regions shown."""
    found: list[tuple[str, int, str]] = []
    for path in dict.fromkeys(region.path for region in regions if region.path.endswith(".py")):
        if is_test_path(path) or not names:
            continue
        try:
            tree = ast.parse(reader.read_text(path) or "")
        except (SyntaxError, ValueError):
            continue
        shown = [(region.start, region.end) for region in regions if region.path == path]
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and target.attr in names
                for target in targets
            ) and any(start <= node.lineno <= end for start, end in shown):
                found.append((path, node.lineno, ast.unparse(node)))
    return found


def _named_by(name: str, words: set[str]) -> bool:
    """Whether the words name the constant ``name``.

    At least two of the words of its name other than ``default`` are among them, and they are at
    least half of those; or its name is ``DEFAULT_`` and words that all are.
    """
    if _CONSTANT.match(name) is None:
        return False
    every = name.lower().split("_")
    own = [word for word in every if word != "default"]
    shared = [word for word in own if word in words]
    enough = len(shared) >= 2 or (len(own) < len(every) and shared == own)
    return enough and 2 * len(shared) >= len(own)


def cited_functions(answer: str, symbols: SymbolIndex) -> str:
    """What each line the answer cites is in (a function, else a top-level definition), when it does not say.

    A line is cited as ``path:line`` or as a file and then "lines 28-47" in the same clause. A
    cited path may be shorter than the project's (``pkg/mod.py`` for ``src/pkg/mod.py``) when it
    ends exactly one indexed file's path. A line on a ``def`` itself, or outside every definition,
    adds nothing; a line of a top-level table or class outside its functions names that.
    """
    rows: list[str] = []
    cited_lines = sorted(
        [*_CITED_LINE.finditer(answer), *_CITED_LINES.finditer(answer)], key=lambda m: m.start()
    )
    for match in cited_lines:
        cited, line = match.group(1), int(match.group(2))
        path = _indexed_path(cited, symbols)
        if path is None:
            continue
        function = _innermost_function(symbols.in_file(path), line) or _outermost_definition(
            symbols.in_file(path), line
        )
        if function is None or (function.line == line and function.kind in ("function", "method")):
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


def _outermost_definition(defined: list[Symbol], line: int) -> Symbol | None:
    """The top-level variable or class ``line`` is in (a table's entry: in ``map``), if any."""
    around = [
        symbol
        for symbol in defined
        if symbol.kind in ("variable", "class") and symbol.owner is None and symbol.line <= line <= symbol.end
    ]
    return min(around, key=lambda symbol: symbol.line, default=None)


def _innermost_function(defined: list[Symbol], line: int) -> Symbol | None:
    around = [
        symbol
        for symbol in defined
        if symbol.kind in ("function", "method") and symbol.line <= line <= symbol.end
    ]
    return max(around, key=lambda symbol: symbol.line, default=None)


def raised(regions: Sequence[Region], intent: Intent, reader: ProjectReader, question: str) -> str:
    """What the code shown raises where it meets the question's words, and when, for "which exception".

    The raise under ``if self.sep in _base64_alphabet:`` was in a small model's evidence, and it
    answered that a separator it does not allow raises ``BadSignature``: the statement itself (its
    message included), the condition it is under and its place follow the answer. Python's
    ``raise`` and JavaScript's ``throw``, in the regions shown (outside the tests), when the
    statement or its condition matches one of the question's terms; at most :data:`MAX_RAISED`.
    """
    if not asks_for_exception(question):
        return ""
    patterns = [re.compile(term_pattern(term)) for term in intent.terms if not term.is_file]
    rows: list[str] = []
    statements: dict[str, list[tuple[int, str, str]]] = {}
    for region in regions:
        path = region.path
        if is_test_path(path) or not path.endswith((".py", *_JS_SUFFIXES)):
            continue
        if path not in statements:
            text = reader.read_text(path) or ""
            statements[path] = _python_raises(text) if path.endswith(".py") else _js_throws(text)
        for line, statement, guard in statements[path]:
            if not region.start <= line <= region.end:
                continue
            if not any(pattern.search(f"{guard} {statement}") for pattern in patterns):
                continue
            when = f" when `{guard}`" if guard else ""
            row = f"`{statement[:MAX_RAISED_CHARS]}`{when} ({path}:{line})"
            if row not in rows:
                rows.append(row)
    return "Raised in the code shown: " + "; ".join(rows[:MAX_RAISED]) + "." if rows else ""


def _python_raises(text: str) -> list[tuple[int, str, str]]:
    """``(line, statement, condition)`` of each ``raise`` with an exception, by ``ast``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    guards: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
                if isinstance(inner, ast.Raise):  # ast.walk goes outer first: the innermost if wins
                    guards[inner.lineno] = ast.unparse(node.test)
    return [
        (node.lineno, f"raise {ast.unparse(node.exc)}", guards.get(node.lineno, ""))
        for node in ast.walk(tree)
        if isinstance(node, ast.Raise) and node.exc is not None
    ]


def _js_throws(text: str) -> list[tuple[int, str, str]]:
    """``(line, statement, condition)`` of each one-line ``throw``, its ``if`` the nearest one above."""
    found: list[tuple[int, str, str]] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        thrown = _THROW.match(line)
        if thrown is None:
            continue
        guard = ""
        for above in reversed(lines[max(0, number - 4) : number - 1]):
            condition = _JS_GUARD.match(above)
            if condition is not None:
                guard = condition.group(1).strip()
                break
        found.append((number, f"throw {thrown.group(1)}", guard))
    return found

"""What a function or class uses for a parameter the caller leaves out, read from its signature.

Asked which key function ``@cached`` uses without ``key=``, a 1.5B model answers with the wrong one
of two neighbouring names (``methodkey`` for ``hashkey``); asked what ``URLSafeSerializer(secret)``
signs with, it answers with another setting's default. The signature says it in one line: for a
class, that of its ``__init__`` or of the first base class that has one; for a ``None`` default,
with the ``if x is None: x = ...`` that follows in the body, and the class attribute that assigns
(``self.default_key_derivation``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TypeAlias

from nestor.runtime.features.small.gathering.facts import IDENTIFIER
from nestor.runtime.features.small.gathering.functions import parsed
from nestor.runtime.features.small.gathering.project import is_test_path
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.symbols import Symbol, SymbolIndex
from nestor.runtime.features.small.understanding.intent import Intent

MAX_LISTED = 4
"""Defaults listed at most."""
MAX_BASE_DEPTH = 4
"""How far up the base classes an ``__init__`` is looked for."""

_Function: TypeAlias = ast.FunctionDef | ast.AsyncFunctionDef


def parameter_defaults(prompt: str, intent: Intent, symbols: SymbolIndex, reader: ProjectReader) -> str:
    """The defaults of the parameters the question names, of the functions and classes it writes as code.

    One row per parameter: ``cached(key=keys.hashkey)``, or for a ``None`` default what the body
    puts in its place. Nothing when the question names no parameter of them.
    """
    words = set(IDENTIFIER.findall(prompt))
    rows: list[str] = []
    for term in intent.terms:
        # A qualifier counts: `URLSafeSerializer(secret)` is read as `secret` qualified by the class.
        if not term.exact or term.is_file:
            continue
        for symbol in symbols.definitions(term.text):
            if symbol.kind not in ("function", "method", "class") or is_test_path(symbol.path):
                continue
            if term.owner is not None and symbol.owner not in (None, term.owner):
                continue
            for row in _rows(symbol, words, symbols, reader):
                if row not in rows:
                    rows.append(row)
    return "Defaults: " + "; ".join(rows[:MAX_LISTED]) + "." if rows else ""


def _rows(symbol: Symbol, words: set[str], symbols: SymbolIndex, reader: ProjectReader) -> Iterator[str]:
    chain = _class_chain(symbol, symbols, reader) if symbol.kind == "class" else []
    found = _constructor(chain, reader) if chain else _function_at(symbol, reader)
    if found is None:
        return
    where, function = found
    via = f" (`{where.owner}.__init__`)" if chain and where.owner != symbol.name else ""
    for argument, default in _defaulted(function):
        if argument.arg not in words:
            continue
        source = reader.read_text(where.path) or ""
        row = f"`{symbol.name}({argument.arg}={_written(source, default)})`{via}"
        replaced = _replacement(function, argument.arg) if _is_none(default) else None
        if replaced is not None:
            row += f", then `{argument.arg} = {_written(source, replaced)}`"
            classes = chain or _class_chain_of_owner(where, symbols, reader)
            attribute = _class_attribute(replaced, classes, reader)
            if attribute is not None:
                row += f" and `{attribute}`"
        yield f"{row} ({where.path}:{where.line})"


def _function_at(symbol: Symbol, reader: ProjectReader) -> tuple[Symbol, _Function] | None:
    node = _node_at(symbol, reader)
    return (symbol, node) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None


def _constructor(chain: list[Symbol], reader: ProjectReader) -> tuple[Symbol, _Function] | None:
    """The ``__init__`` of the first class of ``chain`` that defines one (not an ``@overload``)."""
    for cls in chain:
        node = _node_at(cls, reader)
        if not isinstance(node, ast.ClassDef):
            continue
        inits = [
            child
            for child in node.body
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and child.name == "__init__"
        ]
        concrete = [init for init in inits if not _is_overload(init)] or inits
        if concrete:
            init = concrete[-1]
            end = init.end_lineno or init.lineno
            where = Symbol("__init__", cls.path, init.lineno, end, "method", cls.name)
            return where, init
    return None


def _class_chain(cls: Symbol, symbols: SymbolIndex, reader: ProjectReader) -> list[Symbol]:
    """``cls`` and its base classes defined in the project, nearest first (breadth first)."""
    chain = [cls]
    frontier = [cls]
    for _ in range(MAX_BASE_DEPTH):
        following: list[Symbol] = []
        for current in frontier:
            node = _node_at(current, reader)
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                name = _base_name(base)
                for found in symbols.definitions(name) if name else []:
                    if found.kind == "class" and not is_test_path(found.path) and found not in chain:
                        chain.append(found)
                        following.append(found)
        frontier = following
    return chain


def _class_chain_of_owner(method: Symbol, symbols: SymbolIndex, reader: ProjectReader) -> list[Symbol]:
    owners = [found for found in symbols.definitions(method.owner or "") if found.path == method.path]
    return _class_chain(owners[0], symbols, reader) if owners and owners[0].kind == "class" else []


def _base_name(base: ast.expr) -> str | None:
    if isinstance(base, ast.Subscript):  # Serializer[str]
        base = base.value
    if isinstance(base, ast.Attribute):
        return base.attr
    return base.id if isinstance(base, ast.Name) else None


def _node_at(symbol: Symbol, reader: ProjectReader) -> ast.AST | None:
    tree = parsed(reader.read_text(symbol.path) or "")
    for node in ast.walk(tree):
        defines = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        if defines and node.lineno == symbol.line:
            return node
    return None


def _written(source: str, node: ast.expr) -> str:
    """``node`` as the source writes it (``b"x"``, not ``b'x'``), on one line."""
    segment = ast.get_source_segment(source, node) or ast.unparse(node)
    return " ".join(segment.split())


def _is_overload(function: _Function) -> bool:
    return any(_base_name(decorator) == "overload" for decorator in function.decorator_list)


def _defaulted(function: _Function) -> Iterator[tuple[ast.arg, ast.expr]]:
    positional = [*function.args.posonlyargs, *function.args.args]
    defaults = function.args.defaults
    yield from zip(positional[len(positional) - len(defaults) :], defaults, strict=True)
    for argument, default in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True):
        if default is not None:
            yield argument, default


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _replacement(function: _Function, name: str) -> ast.expr | None:
    """What ``if name is None: name = ...`` (or ``if name is not None: ... else: ...``) puts instead."""
    for statement in function.body:
        if not (isinstance(statement, ast.If) and isinstance(statement.test, ast.Compare)):
            continue
        test = statement.test
        if not (
            isinstance(test.left, ast.Name)
            and test.left.id == name
            and len(test.ops) == 1
            and _is_none(test.comparators[0])
        ):
            continue
        block = statement.body if isinstance(test.ops[0], ast.Is) else statement.orelse
        if isinstance(test.ops[0], ast.Is | ast.IsNot) and block and isinstance(block[0], ast.Assign):
            targets = block[0].targets
            if len(targets) == 1 and _assigns(targets[0], name):
                return block[0].value
    return None


def _assigns(target: ast.expr, name: str) -> bool:
    if isinstance(target, ast.Attribute):
        return target.attr == name
    return isinstance(target, ast.Name) and target.id == name


def _class_attribute(value: ast.expr, chain: list[Symbol], reader: ProjectReader) -> str | None:
    """The one-line assignment of ``self.name`` / ``cls.name`` in the classes of ``chain``, if it is one."""
    if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)):
        return None
    if value.value.id not in ("self", "cls"):
        return None
    for cls in chain:
        node = _node_at(cls, reader)
        if not isinstance(node, ast.ClassDef):
            continue
        for child in node.body:
            target = child.target if isinstance(child, ast.AnnAssign) else None
            if isinstance(child, ast.Assign) and len(child.targets) == 1:
                target = child.targets[0]
            if target is not None and _assigns(target, value.attr) and child.lineno == child.end_lineno:
                lines = (reader.read_text(cls.path) or "").splitlines()
                return lines[child.lineno - 1].strip()
    return None

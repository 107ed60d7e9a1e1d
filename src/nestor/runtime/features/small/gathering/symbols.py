"""The names a Python project defines, read with ``ast``: which words of a prompt are its own names.

A user writes ``countby`` or ``memoize`` as plain words, with nothing that marks them as code; a
small-model harness that searched them as prose would weigh them like "looked" or "next". The
index says which words the project defines (a function, class, method, module, or a variable
assigned at module or class level), where, and inside which class, so that such words are
searched as the names they are and their definitions found exactly.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from nestor.runtime.features.small.gathering.code_index import Definition, code_index
from nestor.runtime.features.small.gathering.functions import parsed
from nestor.runtime.features.small.gathering.languages import language_of
from nestor.runtime.features.small.gathering.project import project_files
from nestor.runtime.features.small.gathering.reader import ProjectReader

MAX_FILES = 2000
"""Python files indexed at most: a huge repository's index would cost seconds for every prompt."""

SymbolKind = Literal["module", "class", "function", "method", "variable"]


@dataclass(frozen=True, slots=True)
class Symbol:
    """One definition of a name.

    Attributes:
        name: The name defined.
        path: The project-relative file.
        line: The first line of the definition (its ``def``/``class`` line, or the assignment).
        end: Its last line.
        kind: What it is: a module (``line`` 1), class, function, method or variable.
        owner: The class it is defined in, for methods and class attributes.

    """

    name: str
    path: str
    line: int
    end: int
    kind: SymbolKind
    owner: str | None = None


class SymbolIndex:
    """The definitions of every name the project's Python files define (see the module docstring)."""

    def __init__(self, symbols: Iterable[Symbol] = ()) -> None:
        self._by_name: dict[str, list[Symbol]] = {}
        for symbol in symbols:
            self._by_name.setdefault(symbol.name, []).append(symbol)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def definitions(self, name: str) -> list[Symbol]:
        """Where ``name`` is defined, in file order (none for a name the project does not define)."""
        return list(self._by_name.get(name, ()))

    def names(self) -> set[str]:
        """Every name the project defines."""
        return set(self._by_name)

    def paths(self) -> set[str]:
        """The files the index holds definitions of."""
        return {symbol.path for symbols in self._by_name.values() for symbol in symbols}

    def in_file(self, path: str) -> list[Symbol]:
        """The definitions of the file ``path``."""
        return [symbol for symbols in self._by_name.values() for symbol in symbols if symbol.path == path]


def symbol_index(reader: ProjectReader) -> SymbolIndex:
    """Index the project's source files (at most :data:`MAX_FILES` of Python) as they are now.

    Python files are read with ``ast``; the other languages with a grammar (JavaScript,
    TypeScript, Rust, Go) through :mod:`.code_index`.
    """
    files = project_files(reader.root)
    python_files = [path for path in files if path.endswith(".py")][:MAX_FILES]
    symbols: list[Symbol] = []
    for path in python_files:
        source = reader.read_text(path)
        if source is None:
            continue
        symbols.append(_module_symbol(path, source))
        symbols.extend(symbols_of(path, source))
    others = [path for path in files if not path.endswith((".py", ".pyi")) and language_of(path)]
    if others:
        symbols.extend(_symbol(definition) for definition in code_index(reader, others).definitions)
    return SymbolIndex(symbols)


_KINDS: dict[str, SymbolKind] = {"function": "function", "method": "method", "variable": "variable"}


def _symbol(definition: Definition) -> Symbol:
    """A definition of another language as a symbol: structs, enums and traits count as classes."""
    kind = _KINDS.get(definition.kind, "variable" if definition.kind == "variant" else "class")
    return Symbol(definition.name, definition.path, definition.line, definition.end, kind, definition.owner)


def symbols_of(path: str, source: str) -> list[Symbol]:
    """The definitions at module level and in the classes of ``source`` (not inside functions)."""
    found: list[Symbol] = []
    for node in parsed(source).body:
        found.extend(_definitions(path, node, owner=None))
    return found


def _definitions(path: str, node: ast.stmt, owner: str | None) -> list[Symbol]:
    end = node.end_lineno or node.lineno
    if isinstance(node, ast.ClassDef):
        found = [Symbol(node.name, path, node.lineno, end, "class", owner)]
        for child in node.body:
            found.extend(_definitions(path, child, owner=node.name))
        return found
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return [Symbol(node.name, path, node.lineno, end, "method" if owner else "function", owner)]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    found = []
    for target in targets:
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        found.extend(
            Symbol(name.id, path, node.lineno, end, "variable", owner)
            for name in names
            if isinstance(name, ast.Name)
        )
    # Definitions under ``if TYPE_CHECKING:``, or a fallback under ``except ImportError:``.
    if isinstance(node, ast.If | ast.Try):
        blocks = [node.body, node.orelse]
        if isinstance(node, ast.Try):
            blocks += [node.finalbody, *(handler.body for handler in node.handlers)]
        for child in (child for block in blocks for child in block):
            found.extend(_definitions(path, child, owner))
    return found


def _module_symbol(path: str, source: str) -> Symbol:
    """The module itself, named as it is imported (a package by its directory)."""
    pure = PurePosixPath(path)
    name = pure.parent.name if pure.stem == "__init__" else pure.stem
    return Symbol(name or pure.stem, path, 1, max(1, source.count("\n")), "module")

"""The languages the harness reads with real grammars (tree-sitter), chosen by a file's name.

Python, JavaScript, TypeScript (and TSX), Rust and Go: each grammar is a package of its own, imported
the first time a file of its language is parsed, and one parser per language is kept.
"""

from __future__ import annotations

import functools
import json
import tomllib
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import tree_sitter

Language = Literal["python", "javascript", "typescript", "tsx", "rust", "go"]

_SUFFIXES: dict[str, Language] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
}


def language_of(path: str) -> Language | None:
    """The language of ``path`` by its suffix, or None for a file the harness has no grammar for."""
    return _SUFFIXES.get(PurePosixPath(path).suffix.lower())


def parse(path: str, source: str) -> tree_sitter.Tree | None:
    """``source`` parsed as the language of ``path``; None when there is no grammar for it."""
    language = language_of(path)
    if language is None:
        return None
    return _parser(language).parse(source.encode("utf-8", errors="replace"))


def parses_cleanly(path: str, source: str) -> bool | None:
    """Whether ``source`` parses without a syntax error; None when there is no grammar for ``path``.

    JSON and TOML files (``package.json``, ``Cargo.toml``, ``pyproject.toml``) are read with the
    standard library's parsers.
    """
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in (".json", ".toml"):
        try:
            json.loads(source) if suffix == ".json" else tomllib.loads(source)
        except ValueError:
            return False
        return True
    tree = parse(path, source)
    if tree is None:
        return None
    return not tree.root_node.has_error


@functools.cache
def _parser(language: Language) -> tree_sitter.Parser:
    import tree_sitter

    return tree_sitter.Parser(tree_sitter.Language(_grammar(language)))


def _grammar(language: Language) -> object:
    if language == "python":
        import tree_sitter_python

        return tree_sitter_python.language()
    if language == "javascript":
        import tree_sitter_javascript

        return tree_sitter_javascript.language()
    if language in ("typescript", "tsx"):
        import tree_sitter_typescript

        return (
            tree_sitter_typescript.language_tsx()
            if language == "tsx"
            else tree_sitter_typescript.language_typescript()
        )
    if language == "go":
        import tree_sitter_go

        return tree_sitter_go.language()
    import tree_sitter_rust

    return tree_sitter_rust.language()

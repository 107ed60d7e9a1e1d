"""The project's own names, read with ast."""

from pathlib import Path

from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.symbols import symbol_index, symbols_of

MODULE = '''"""Recipes."""
import itertools

try:
    from fast import countby
except ImportError:
    def countby(key, seq):
        return {}

LIMIT: int = 10
first, second = 1, 2


class Bag:
    size = 0

    def add(self, item):
        def inner():
            pass
        return item
'''


def test_definitions_at_module_and_class_level_with_their_owner() -> None:
    found = {(s.name, s.kind, s.owner, s.line) for s in symbols_of("pkg/recipes.py", MODULE)}
    assert ("countby", "function", None, 7) in found
    assert ("LIMIT", "variable", None, 10) in found
    assert ("second", "variable", None, 11) in found
    assert ("Bag", "class", None, 14) in found
    assert ("size", "variable", "Bag", 15) in found
    assert ("add", "method", "Bag", 17) in found
    # Names local to a function are not the project's names; imports are someone else's.
    assert not {name for name, *_ in found} & {"inner", "itertools", "item"}


def test_the_index_knows_modules_and_packages_by_their_import_names(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("VERSION = '1'\n")
    (tmp_path / "pkg" / "recipes.py").write_text(MODULE)
    (tmp_path / "broken.py").write_text("def (:\n")
    index = symbol_index(ProjectReader(tmp_path))
    assert [s.kind for s in index.definitions("pkg")] == ["module"]
    assert [s.path for s in index.definitions("recipes")] == ["pkg/recipes.py"]
    assert [(s.path, s.line) for s in index.definitions("countby")] == [("pkg/recipes.py", 7)]
    assert "broken" in index and "looked" not in index

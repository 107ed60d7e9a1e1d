"""Which function a change request names, for the step that has the model write it again whole."""

from pathlib import Path

from nestor.runtime.features.small.acting.rewriting import named_function
from nestor.runtime.features.small.gathering.code_index import code_index
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.understanding.intent import read_intent

SOURCE = """def frequencies(seq):
    return {}


class Cache:
    def key(self, args):
        return args

    def get(self, name):
        return name


class Store:
    def key(self, args):
        return args[0]

    def get(self, name):
        return None
"""


def _named(root: Path, prompt: str) -> str | None:
    (root / "lib.py").write_text(SOURCE)
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test_lib.py").write_text("def test_frequencies():\n    pass\n")
    index = code_index(ProjectReader(root))
    names = {definition.name for definition in index.definitions}
    found = named_function(read_intent(prompt, (), names), index)
    return found.qualified if found is not None else None


def test_the_one_function_a_request_names_is_found_and_a_name_defined_twice_is_not_it(tmp_path: Path) -> None:
    # Found on toolz: "an optional `key` parameter" named `key`, defined in several classes.
    assert _named(tmp_path, "Add an optional `key` parameter to frequencies.") == "frequencies"
    assert _named(tmp_path, "Make Store.get return a default instead of None.") == "Store.get"
    assert _named(tmp_path, "Make get return a default.") is None  # which class's?
    assert _named(tmp_path, "Make frequencies call Cache.get.") is None  # two functions: which one?
    assert _named(tmp_path, "Add a section to the README.") is None

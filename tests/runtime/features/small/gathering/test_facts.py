"""Facts under a small model's answer: the functions its cited lines are in, where names are defined."""

from __future__ import annotations

from pathlib import Path

from nestor.runtime.features.small.gathering.evidence import Region
from nestor.runtime.features.small.gathering.facts import (
    asks_for_a_default,
    cited_functions,
    is_test_path,
    raised,
    values,
    where_defined,
)
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.symbols import SymbolIndex, symbol_index, symbols_of
from nestor.runtime.features.small.understanding.intent import read_intent

TIMED = """\
class TimestampSigner:
    def get_timestamp(self):
        return 0

    def unsign(self, value, max_age=None):
        age = self.get_timestamp()
        if age > max_age:
            raise SignatureExpired(age)
        return value


def helper():
    return 1
"""


def _index() -> SymbolIndex:
    return SymbolIndex(symbols_of("src/pkg/timed.py", TIMED))


def test_a_cited_line_inside_a_method_is_named_with_its_class() -> None:
    facts = cited_functions("It is compared at `src/pkg/timed.py:7`.", _index())
    assert facts == "Lines cited: `src/pkg/timed.py:7` is in `TimestampSigner.unsign` (src/pkg/timed.py:5)."


def test_a_shorter_path_that_ends_one_indexed_file_is_resolved() -> None:
    facts = cited_functions("See pkg/timed.py:13 and timed.py:3.", _index())
    assert facts == (
        "Lines cited: `pkg/timed.py:13` is in `helper` (src/pkg/timed.py:12); "
        "`timed.py:3` is in `TimestampSigner.get_timestamp` (src/pkg/timed.py:2)."
    )


def test_nothing_is_added_when_the_answer_names_the_function_or_cites_no_body_line() -> None:
    index = _index()
    assert cited_functions("`unsign` raises it (src/pkg/timed.py:8).", index) == ""
    assert cited_functions("The method starts at src/pkg/timed.py:5.", index) == ""
    assert cited_functions("other/timed.py:7 and src/pkg/missing.py:7", index) == ""


def test_the_functions_and_methods_the_answer_names_are_placed_each_with_its_class() -> None:
    # Found blind on itsdangerous: "where is the zlib compression?" was answered "in the
    # `load_payload` method", without the class; two classes define one.
    index = SymbolIndex(
        [
            *symbols_of(
                "src/pkg/serializer.py", "class Serializer:\n    def load_payload(self):\n        pass\n"
            ),
            *symbols_of("src/pkg/url_safe.py", "class Mixin:\n    def load_payload(self):\n        pass\n"),
            *symbols_of("src/pkg/timed.py", TIMED),
            *symbols_of("tests/test_timed.py", "def helper():\n    pass\n"),
        ]
    )
    intent = read_intent("Where is `helper`?", index.names())
    answer = "In `load_payload`, with `zlib.compress` and `TimestampSigner.unsign`; `helper` too."
    assert where_defined(intent, index, answer) == (
        "Defined at: `helper`: src/pkg/timed.py:12; "
        "`load_payload`: src/pkg/serializer.py:2 (`Serializer`), src/pkg/url_safe.py:2 (`Mixin`); "
        "`TimestampSigner`: src/pkg/timed.py:1; `TimestampSigner.unsign`: src/pkg/timed.py:5."
    )


def test_test_paths_by_convention() -> None:
    assert is_test_path("tests/test_x.py") and is_test_path("pkg/x_test.py") and is_test_path("test/a.py")
    assert not is_test_path("src/pkg/testing.py")


CONFIG = """\
DEFAULT_LOW_STOCK_THRESHOLD = 5
DEFAULT_CURRENCY = "eur"
MAX_STOCK = 10_000
LOW_STOCK_THRESHOLD_HELP = (
    "items at or below it"
)
"""


def _config_project(root: Path) -> ProjectReader:
    (root / "src").mkdir()
    (root / "src" / "config.py").write_text(CONFIG)
    (root / "tests").mkdir()
    (root / "tests" / "test_config.py").write_text("LOW_STOCK_THRESHOLD_DEFAULT_FOR_TESTS = 1\n")
    return ProjectReader(root)


def test_a_question_about_a_default_gets_the_constants_its_words_name(tmp_path: Path) -> None:
    # Found on stockroom: asked for the threshold without a stockroom.ini, the model quoted the
    # README's example (3), not the constant the code uses (5).
    reader = _config_project(tmp_path)
    index = symbol_index(reader)
    prompt = "What low-stock threshold does `stockroom low` use if I have no stockroom.ini?"
    assert asks_for_a_default(prompt)
    facts = values("It is 3.", read_intent(prompt), index, reader, default=True)
    # Not MAX_STOCK (one word of two), not the multi-line help text, not the tests' constant.
    assert facts == "Values: `DEFAULT_LOW_STOCK_THRESHOLD = 5` (src/config.py:1)."
    currency = values("", read_intent("What currency is used by default?"), index, reader, default=True)
    assert currency == """Values: `DEFAULT_CURRENCY = "eur"` (src/config.py:2)."""
    assert values("", read_intent("What stock do I have by default?"), index, reader, default=True) == ""
    # Not a question about a default: the question's words name nothing.
    assert values("It is 3.", read_intent(prompt), index, reader, default=False) == ""


def test_a_name_the_question_writes_as_code_gets_its_assignment(tmp_path: Path) -> None:
    # Found blind on toolz: "is `toolz.comp` just an alias of something?" went unanswered.
    reader = _config_project(tmp_path)
    (tmp_path / "src" / "__init__.py").write_text("comp = compose\nTABLE = " + repr("x" * 200) + "\n")
    index = symbol_index(reader)
    intent = read_intent("Is `pkg.comp` an alias? And `TABLE`?", index.names())
    assert (
        values("It is.", intent, index, reader, default=False)
        == "Values: `comp = compose` (src/__init__.py:1)."
    )


def test_a_constant_the_answer_names_gets_its_value_unless_the_answer_quotes_it(tmp_path: Path) -> None:
    # Found on stockroom: the explore agent answered "returns `EXIT_ERROR`", never saying it is 1.
    reader = _config_project(tmp_path)
    index = symbol_index(reader)
    intent = read_intent("What does it return when it fails?")
    answer = "It returns MAX_STOCK, or `LOW_STOCK_THRESHOLD_DEFAULT_FOR_TESTS`, or NOT_DEFINED_HERE."
    assert (
        values(answer, intent, index, reader, default=False)
        == "Values: `MAX_STOCK = 10_000` (src/config.py:3)."
    )
    assert values("It is MAX_STOCK = 10_000 there.", intent, index, reader, default=False) == ""


def test_a_module_level_name_the_answer_writes_as_code_gets_its_assignment(tmp_path: Path) -> None:
    # Found blind on itsdangerous: the explanation of int_to_bytes named `_int64_struct.pack` and
    # then guessed at the byte order; the struct's format (">Q") is one line away.
    (tmp_path / "encoding.py").write_text(
        'import struct\n_int64_struct = struct.Struct(">Q")\n_int_to_bytes = _int64_struct.pack\n'
        "def int_to_bytes(num):\n    key = 1\n    return _int_to_bytes(num)\n"
    )
    reader = ProjectReader(tmp_path)
    index = symbol_index(reader)
    intent = read_intent("Explain int_to_bytes.", index.names())
    answer = "It calls `_int_to_bytes(num)`, which is `_int64_struct.pack`; `key` and `int_to_bytes` too."
    assert values(answer, intent, index, reader, default=False) == (
        "Values: `_int_to_bytes = _int64_struct.pack` (encoding.py:3); "
        """`_int64_struct = struct.Struct(">Q")` (encoding.py:2)."""
    )
    # Named outside code, the name is prose: nothing follows.
    assert values("It uses _int64_struct.", intent, index, reader, default=False) == ""


def test_only_questions_about_defaults_ask_for_them() -> None:
    assert asks_for_a_default("What salt is used when I don't pass one?")
    assert asks_for_a_default("Which key does it use by default?")
    assert not asks_for_a_default("Which function raises SignatureExpired?")


UNITS_JS = """var map = {
  b: 1,
  kb: 1 << 10,
};

function parse(text) {
  return map[text];
}
"""


def test_a_table_the_answer_cites_by_its_lines_is_named(tmp_path: Path) -> None:
    # Found blind on bytes: "where is the table of the units' sizes?" was answered "in index.js at
    # lines 1-4", which never named the `map` asked about; nor did a class's own line.
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "index.js").write_text(UNITS_JS)
    (tmp_path / "src" / "pkg" / "timed.py").write_text(TIMED)
    index = symbol_index(ProjectReader(tmp_path))

    facts = cited_functions("It is located in the `index.js` file at lines 1-4.", index)
    on_class = cited_functions("The class starts at src/pkg/timed.py:1.", index)

    assert facts == "Lines cited: `index.js:1` is in `map` (index.js:1)."
    assert on_class == "Lines cited: `src/pkg/timed.py:1` is in `TimestampSigner` (src/pkg/timed.py:1)."
    assert cited_functions("`parse` reads it (index.js:7).", index) == ""


SIGNER = """\
class Signer:
    def __init__(self, sep="."):
        self.sep = sep
        if self.sep in _base64_alphabet:
            raise ValueError(
                "The given separator cannot be used because it may be"
                " contained in the signature itself."
            )

    def unsign(self, value):
        if "." not in value:
            raise BadSignature("no separator")
        return value
"""

COOKIE = """\
function parse(str, opt) {
  if (typeof str !== 'string') {
    throw new TypeError('argument str must be a string');
  }
  return {};
}
"""


def test_the_raise_a_question_about_an_exception_meets_follows_with_its_condition(tmp_path: Path) -> None:
    # Found on itsdangerous, blind: the raise was in the evidence and a small model answered that
    # a separator it does not allow raises BadSignature.
    (tmp_path / "signer.py").write_text(SIGNER)
    (tmp_path / "index.js").write_text(COOKIE)
    reader = ProjectReader(tmp_path)
    question = "Which characters aren't allowed as the `sep` of a Signer, and what exception gets raised?"
    shown = [Region("signer.py", 1, 14, 1.0, "class Signer")]
    assert raised(shown, read_intent(question), reader, question) == (
        "Raised in the code shown: `raise ValueError('The given separator cannot be used because it may be"
        " contained in the signature itself.')` when `self.sep in _base64_alphabet` (signer.py:5)."
    )
    # Only the raises the question's words meet, in the lines shown, for a question about one.
    assert (
        raised([Region("signer.py", 10, 14, 1.0, "def unsign")], read_intent(question), reader, question)
        == ""
    )
    assert raised(shown, read_intent("What does `sep` do?"), reader, "What does `sep` do?") == ""
    thrown = "What error do I get when I pass parse something that is not a string?"
    (tmp_path / "README.md").write_text("if (typeof s !== 'string') {\n  throw new TypeError('a string');\n")
    readme = [Region("README.md", 1, 2, 1.0, "")]
    assert raised(readme, read_intent(thrown), reader, thrown) == ""  # code only
    assert raised([Region("index.js", 1, 6, 1.0, "")], read_intent(thrown), reader, thrown) == (
        "Raised in the code shown: `throw new TypeError('argument str must be a string')` when"
        " `typeof str !== 'string'` (index.js:3)."
    )


LOADER = """\
class TlzLoader:
    def __init__(self):
        self.always_from_toolz = {
            toolz.pipe,
        }
        self.unused = 1
"""


def test_an_attribute_the_answer_names_is_followed_by_what_the_code_shown_sets_it_to(tmp_path: Path) -> None:
    # Found blind on toolz: "it defines a dictionary `always_from_toolz`", and no word of pipe.
    (tmp_path / "tlz").mkdir()
    (tmp_path / "tlz" / "_build_tlz.py").write_text(LOADER)
    reader = ProjectReader(tmp_path)
    index = symbol_index(reader)
    intent = read_intent("What does the tlz package always take from toolz?")
    answer = "The `TlzLoader` defines `always_from_toolz`."
    shown = [Region("tlz/_build_tlz.py", 1, 6, 1.0, "class TlzLoader")]
    assert values(answer, intent, index, reader, default=False, regions=shown) == (
        "Values: `self.always_from_toolz = {toolz.pipe}` (tlz/_build_tlz.py:3)."
    )
    # Only in the lines shown.
    elsewhere = [Region("tlz/_build_tlz.py", 6, 6, 1.0, "")]
    assert values(answer, intent, index, reader, default=False, regions=elsewhere) == ""

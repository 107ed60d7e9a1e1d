"""Facts under a small model's answer: the functions its cited lines are in, where names are defined."""

from __future__ import annotations

from nestor.runtime.small.facts import cited_functions, is_test_path
from nestor.runtime.small.symbols import SymbolIndex, symbols_of

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
    on_definitions = "The class starts at src/pkg/timed.py:1; the method at src/pkg/timed.py:5."
    assert cited_functions(on_definitions, index) == ""
    assert cited_functions("other/timed.py:7 and src/pkg/missing.py:7", index) == ""


def test_test_paths_by_convention() -> None:
    assert is_test_path("tests/test_x.py") and is_test_path("pkg/x_test.py") and is_test_path("test/a.py")
    assert not is_test_path("src/pkg/testing.py")

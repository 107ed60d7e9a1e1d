import pytest

from nestor.runtime.features.small.understanding.code_words import (
    PROTOCOL_WEIGHT,
    bound_names,
    operator_names,
    protocol_names,
)
from nestor.runtime.features.small.understanding.intent import search_terms


def test_a_bound_is_joined_to_each_subject_but_not_to_itself() -> None:
    assert bound_names("which key is the shortest allowed?", ["key", "shortest", "allow"]) == [
        "min_key",
        "min_allow",
    ]
    assert bound_names("at most how many?", ["comparator"]) == ["max_comparator"]
    assert bound_names("where are keys made?", ["key"]) == []


def test_the_names_languages_give_a_behaviour_are_searched_below_every_word() -> None:
    # Found on semver (Rust): "where is a version string parsed into a Version?" is
    # `impl FromStr for Version`, a line with none of the question's words but "Version".
    assert protocol_names("Where is a version string parsed?")[:2] == ["FromStr", "from_str"]
    assert "__lt__" in protocol_names("How are two versions compared?")
    assert protocol_names("What does the cache hold?") == []
    terms = {t.text: t for t in search_terms("Where is a version string parsed into a Version?")}
    assert terms["FromStr"].exact and terms["FromStr"].weight == PROTOCOL_WEIGHT
    assert all(t.weight > PROTOCOL_WEIGHT for t in terms.values() if t.text not in ("FromStr", "from_str"))


@pytest.mark.parametrize(
    ("prose", "names"),
    [
        ("The requirement `<2.0.0` now matches 3.0.0", [("less",), ("lt",)]),
        ("x<5 holds", [("less",), ("lt",)]),
        ("it fails when a < b", [("less",), ("lt",)]),
        ("`>= 5` fails", [("greater", "eq"), ("ge",), ("gte",)]),
        ("a != b is true", [("ne",), ("not", "equal"), ("not", "eq")]),
        # Not comparisons: arrows, shifts, tags, generics.
        ("rename a -> b and x => y", []),
        ("1 << 20 is a megabyte", []),
        ("the <div> tag", []),
        ("a Vec<T> of them", []),
    ],
)
def test_a_comparison_the_request_writes_is_named_as_code_names_it(
    prose: str, names: list[tuple[str, ...]]
) -> None:
    assert operator_names(prose) == names

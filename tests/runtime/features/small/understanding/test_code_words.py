from nestor.runtime.features.small.understanding.code_words import (
    PROTOCOL_WEIGHT,
    bound_names,
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

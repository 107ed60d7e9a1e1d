import pytest

from nestor.runtime.features.small.understanding.code_words import BOUND_WEIGHT
from nestor.runtime.features.small.understanding.intent import (
    delegated_task,
    question_parts,
    read_intent,
    read_rename,
    request_kind,
    search_terms,
)


@pytest.mark.parametrize(
    ("prompt", "kind"),
    [
        ("Where is the Signer class defined?", "question"),
        ("What does `load_config` return when the file is missing?", "question"),
        ("How do I add a new command?", "question"),
        ("Explain what parse_args does.", "question"),
        ("Fix the bug in the parser.", "change"),
        ("Please rename `get_user` to `fetch_user` everywhere.", "change"),
        ("Can you add a --verbose flag to the CLI?", "change"),
        ("test_totals in tests/test_ledger.py fails. Make it pass.", "change"),
        ("The test test_signer fails since yesterday, please fix it", "change"),
        (
            "Give a short tour of this repository: what it is, how it is laid out, and how to run its tests.",
            "tour",
        ),
        ("How is this project organised?", "tour"),
        # Found blind on itsdangerous and toolz: tours asked in other words.
        (
            "just cloned this repo. what's it for, and how do i run its test suite? a quick map of "
            "where things live would help too",
            "tour",
        ),
        ("what does this library do, where does the code live, and how do I run the test suite?", "tour"),
        ("How do I run the tests for the parser?", "question"),
        ("I'd like an `invert(d, factory=dict)` function in dicttoolz that swaps keys and values.", "change"),
        ("I'd like a tour of the parser", "tour"),
        ("I need a quick explanation of the parser", "question"),
        # Everyday edits whose verb is none of the first ones: "extract" was read as a question.
        ("Extract the body of the loop in parse into a helper function.", "change"),
        ("Bump the version in package.json to 3.1.3.", "change"),
        ("Set the default timeout to 30 seconds.", "change"),
        ("Log each removal at INFO level in Inventory.remove.", "change"),
        ("Please document the Signer class.", "change"),
        ("Ensure parse rejects an empty string.", "change"),
        ("How do I extract a helper function from parse?", "question"),
        ("Which setting limits the cache size?", "question"),
    ],
)
def test_request_kind(prompt: str, kind: str) -> None:
    assert request_kind(prompt) == kind


def test_identifiers_outweigh_words_and_phrases_are_joined() -> None:
    terms = {term.text: term for term in search_terms("What digest method does `Signer` use by default?")}
    assert terms["Signer"].weight > terms["digest_method"].weight > terms["digest"].weight
    assert terms["Signer"].exact and not terms["digest"].exact
    assert "what" not in terms and "default" not in terms


def test_code_like_words_files_and_dotted_names() -> None:
    terms = {
        term.text: term
        for term in search_terms("Why does config.load_file() in settings.py raise ValueError?")
    }
    assert terms["settings.py"].is_file
    assert terms["load_file"].weight == 3.0
    assert terms["config"].exact


def test_a_method_called_in_a_chain_is_a_name_not_a_word() -> None:
    prompt = 'What does Version.parse("1.0.0").compare("2.0.0") return? Ordering.'
    terms = {term.text: term for term in search_terms(prompt)}
    assert terms["compare"].exact and terms["compare"].weight == 3.0
    # A word after a sentence's full stop is still prose (and searched by its stem).
    assert not terms["order"].exact


def test_named_agent_and_failing_tests() -> None:
    intent = read_intent("Use the explore agent to find where tokens are refreshed.", ["explore", "plan"])
    assert intent.agent == "explore"
    assert read_intent("use the foo agent to look", ["explore"]).agent is None
    failing = read_intent("test_refresh_token fails; fix it")
    assert failing.failing_tests == ("test_refresh_token",)


@pytest.mark.parametrize(
    ("prompt", "renamed"),
    [
        ("Rename `load_items` to `fetch_items` across the project.", ("load_items", "fetch_items")),
        # Found blind on itsdangerous: "->", then "as well" later in the prompt.
        (
            "Please rename Signer.derive_key -> derive_signing_key. Update the callers and the tests "
            "as well, and don't leave an alias behind.",
            ("derive_key", "derive_signing_key"),
        ),
        # Found blind on toolz: "it" is the helper named in the sentence before.
        (
            "The internal `getter` helper in itertoolz has a pretty vague name. Rename it to "
            "`make_getter` and update everything that imports or calls it.",
            ("getter", "make_getter"),
        ),
        (
            "Rename the private helper Version._increment_string to _increment_last",
            ("_increment_string", "_increment_last"),
        ),
        ("can you rename parse into parse_version", ("parse", "parse_version")),
        ("Rename the tests as well", None),
        ("What does rename_all do?", None),
    ],
)
def test_a_rename_names_a_name_the_project_has(prompt: str, renamed: tuple[str, str] | None) -> None:
    project = {"load_items", "derive_key", "Signer", "getter", "Version", "_increment_string", "parse"}
    assert read_rename(prompt, project.__contains__) == renamed


def test_a_files_path_is_no_name_to_rename() -> None:
    # Found trying a file rename on stockroom: its package's name was renamed to "src" everywhere.
    project = {"stockroom", "reports", "report", "src", "tests", "load_items"}.__contains__
    assert (
        read_rename("Rename the file src/stockroom/reports.py to src/stockroom/report.py.", project) is None
    )
    assert read_rename("Rename load_items.py to fetch_items.py", project) is None
    assert read_rename("Rename `load_items` to `fetch_items` in src/stockroom/cli.py", project) == (
        "load_items",
        "fetch_items",
    )


def test_a_plain_word_the_project_defines_is_searched_as_its_name() -> None:
    # Found blind on toolz: "where's countby implemented?" searched "countby" like "looked".
    names = {"countby", "groupby", "digest_method"}
    terms = {
        term.text: term for term in search_terms("where's countby implemented? not next to groupby", names)
    }
    assert terms["countby"].exact and terms["countby"].prose and terms["countby"].weight == 2.0
    assert not terms["next"].exact  # a word the project does not define stays a word
    joined = {term.text: term for term in search_terms("What digest method is used?", names)}
    assert joined["digest_method"].exact


def test_words_are_searched_by_their_stems_and_hyphenated_words_as_one() -> None:
    terms = {
        term.text: term
        for term in search_terms("How are signatures compared when verifying URL-safe tokens?")
    }
    assert {"signature", "compar", "verify", "url_safe"} <= set(terms)
    assert terms["url_safe"].weight == 2.0 and not terms["url_safe"].exact


def test_an_acronym_is_a_word_unless_the_project_names_it() -> None:
    assert not {t.text: t for t in search_terms("Is the JSON valid?", {"load"})}["json"].exact
    assert {t.text: t for t in search_terms("Which file checks a SKU?", {"SKU_PATTERN"})}["SKU"].exact


@pytest.mark.parametrize(
    ("prompt", "parts"),
    [
        ("Where is the Signer class defined?", 1),
        (
            "A few things about errors:\n1) which exception do I get for a bad payload?\n"
            "2) what's the parent class of SignatureExpired?\n3) how are signatures compared?",
            3,
        ),
        ("what maxsize do the decorators use, and which cache class is behind @ttl_cache?", 2),
        ("Where does the pysemver command build its argparse parser and run it?", 1),
        ("What is the default maxsize? And which class is behind @ttl_cache?", 2),
    ],
)
def test_a_prompt_is_cut_into_the_questions_it_asks(prompt: str, parts: int) -> None:
    assert len(question_parts(prompt)) == parts


@pytest.mark.parametrize(
    ("prompt", "task"),
    [
        (
            "Use the explore agent to find out which lock the decorators pass.",
            "Find out which lock the decorators pass.",
        ),
        (
            "Can you have the explore agent check where tokens are refreshed?",
            "Check where tokens are refreshed?",
        ),
        ("Find where tokens are refreshed, using the explore agent.", "Find where tokens are refreshed."),
        ("Ask the explore agent: where is X?", "Where is X?"),
    ],
)
def test_the_agent_gets_the_prompt_without_the_words_that_ask_for_it(prompt: str, task: str) -> None:
    assert delegated_task(prompt) == task


@pytest.mark.parametrize(
    ("prompt", "kind"),
    [
        ("`<2.0.0` matches 3.0.0. Find the bug and fix it without touching the tests.", "change"),
        ("Look into the parser and then fix the crash.", "change"),
        ("How do I find the bug and fix it?", "question"),
        ('Give to_csv an optional `delimiter` parameter (default ",").', "change"),
        ("Give me an overview of this repository.", "tour"),
    ],
)
def test_a_change_is_read_where_its_verb_is_not_the_first_word(prompt: str, kind: str) -> None:
    assert request_kind(prompt) == kind


def test_a_question_about_a_bound_searches_the_bound_joined_to_its_words() -> None:
    # Found on semver (Rust): "how many comparators ... at most" is answered by `MAX_COMPARATORS`,
    # a line the words "comparators" and "most" alone never ranked into view.
    terms = {t.text: t for t in search_terms("How many comparators can one VersionReq have at most?")}
    assert terms["max_comparator"].weight == BOUND_WEIGHT and not terms["max_comparator"].exact
    assert "many" not in terms and not any(text.startswith("min_") for text in terms)
    shortest = {t.text for t in search_terms("What is the shortest key length allowed?")}
    assert "min_length" in shortest and "min_shortest" not in shortest
    assert not any(t.text.startswith("max_") for t in search_terms("Where are comparators parsed?"))


def test_a_name_of_one_or_two_letters_in_code_is_not_searched() -> None:
    # Found on cookie: `a=%E0%A4%A` (a cookie's text) made "A" the strongest term, and the search
    # for it ranked LICENSE's "AS IS" above the parser.
    terms = {t.text for t in search_terms("What does parse do with a value like `a=%E0%A4%A`?")}
    assert not {"a", "A", "A4", "E0"} & terms
    assert "LRUCache" in {t.text for t in search_terms("With `c = LRUCache(2)`, what does c hold?")}

"""Which files a change request allows: read from the request, before any edit."""

from nestor.runtime.features.small.understanding.scope import read_scope

FILES = [
    "index.js",
    "lib/util.js",
    "test/index.test.js",
    "README.md",
    "src/pkg/core.py",
    "src/pkg/extra.py",
    "tests/test_core.py",
]


def test_a_file_named_with_not_the_tests_is_the_only_file_and_no_test_may_change() -> None:
    scope = read_scope("Fix the bug in index.js, not in the tests.", FILES, fixing=True)
    assert scope.allows("index.js", exists=True)
    assert not scope.allows("test/index.test.js", exists=True)
    assert not scope.allows("lib/util.js", exists=True)
    refusal = scope.refusal("test/index.test.js", exists=True) or ""
    assert "test file" in refusal and "leave the tests alone" in refusal


def test_a_fix_never_changes_tests_unless_it_asks_to() -> None:
    fix = read_scope("The sum is off by one, fix it.", FILES, fixing=True)
    assert fix.allows("src/pkg/core.py", exists=True) and not fix.allows("tests/test_core.py", exists=True)
    asked = read_scope("Fix the bug and add a regression test for it.", FILES, fixing=True)
    assert asked.allows("tests/test_core.py", exists=True) and asked.allows("tests/test_new.py", exists=False)


def test_a_failing_test_named_in_a_fix_says_where_it_fails_not_what_to_change() -> None:
    scope = read_scope("test_add in tests/test_core.py fails. Fix the code.", FILES, fixing=True)
    assert scope.allows("src/pkg/core.py", exists=True)
    assert not scope.allows("tests/test_core.py", exists=True)


def test_change_nothing_else_allows_only_the_file_defining_the_name() -> None:
    scope = read_scope(
        "Add a one-line docstring to `total`, change nothing else.",
        FILES,
        fixing=False,
        defines=lambda name: ["src/pkg/core.py"] if name == "total" else [],
        names=["total"],
    )
    assert scope.allows("src/pkg/core.py", exists=True)
    assert not scope.allows("src/pkg/extra.py", exists=True)
    assert not scope.allows("tests/test_core.py", exists=True)
    assert not scope.allows("src/pkg/new.py", exists=False)


def test_a_named_test_module_for_new_tests_leaves_the_code_free_and_other_tests_alone() -> None:
    scope = read_scope(
        "Add a `reset` method to Counter, with a test in tests/test_core.py.", FILES, fixing=False
    )
    assert scope.allows("src/pkg/core.py", exists=True) and scope.allows("tests/test_core.py", exists=True)
    assert not scope.allows("tests/test_other.py", exists=False)


def test_a_file_named_to_be_left_alone_is_refused_whatever_else_is_allowed() -> None:
    scope = read_scope("Update the install section, but do not touch README.md.", FILES, fixing=False)
    assert not scope.allows("README.md", exists=True)
    assert scope.allows("lib/util.js", exists=True)


def test_a_rename_changes_tests_too_and_an_unnamed_file_resolves_by_its_ending() -> None:
    rename = read_scope("Rename `total` to `grand_total`.", FILES, fixing=False, renaming=True)
    assert rename.allows("tests/test_core.py", exists=True)
    scope = read_scope("In util.js, make pad() accept a fill character.", FILES, fixing=False)
    assert scope.files == frozenset({"lib/util.js"})
    assert not scope.allows("test/index.test.js", exists=True)

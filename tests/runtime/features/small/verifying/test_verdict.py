"""Whether a change holds: files still parse, tests pass (or fail no more than before)."""

from pathlib import Path

from nestor.runtime.features.small.verifying.snapshot import Snapshot
from nestor.runtime.features.small.verifying.verdict import change_problem, failing_tests


def test_failing_tests_are_read_from_each_runners_output() -> None:
    output = (
        "FAILED tests/test_a.py::test_one - assert 1 == 2\n"
        "not ok 3 - pads with zeros\n"
        "test tests::parses_empty ... FAILED\n"
        "--- FAIL: TestSum (0.00s)\n"
        "  ✖ trims spaces (1.2ms)\n"
    )
    assert failing_tests(output) == {
        "tests/test_a.py::test_one",
        "pads with zeros",
        "tests::parses_empty",
        "TestSum",
        "trims spaces",
    }


async def _no_tests(command: str | None) -> str | None:
    raise AssertionError("no test should run")


async def test_a_file_left_with_a_syntax_error_does_not_hold(tmp_path: Path) -> None:
    root = tmp_path
    (root / "index.js").write_text("function f() { return 1; }\n")
    snapshot = Snapshot(root)
    snapshot.keep("index.js")
    (root / "index.js").write_text("def f():\n    return 1\n")
    problem = await change_problem(
        snapshot, lambda path: (root / path).read_text(), _no_tests, None, None, fixing=False
    )
    assert problem == "it left a syntax error in index.js"


async def test_tests_must_pass_after_a_fix_and_fail_no_more_after_another_change(tmp_path: Path) -> None:
    snapshot = Snapshot(tmp_path)
    before = "FAILED tests/test_a.py::test_one\n1 failed"

    async def same(command: str | None) -> str | None:
        return before

    async def more(command: str | None) -> str | None:
        return before + "\nFAILED tests/test_a.py::test_two"

    def read(path: str) -> str | None:
        return None

    assert await change_problem(snapshot, read, same, "pytest", before, fixing=False) is None
    worse = await change_problem(snapshot, read, more, "pytest", before, fixing=False)
    assert worse is not None and "test_two" in worse
    fixed = await change_problem(snapshot, read, same, "pytest", before, fixing=True)
    assert fixed is not None and fixed.startswith("the tests (`pytest`) fail after it")


async def test_a_json_or_toml_file_left_unreadable_does_not_hold(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "x"}\n')
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "x"\n')
    snapshot = Snapshot(tmp_path)
    snapshot.keep("package.json")
    snapshot.keep("Cargo.toml")
    (tmp_path / "package.json").write_text('{"name": "x",}\n')
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "x"\nversion = "1.0.1"\n')
    problem = await change_problem(
        snapshot, lambda path: (tmp_path / path).read_text(), _no_tests, None, None, fixing=False
    )
    assert problem == "it left a syntax error in package.json"

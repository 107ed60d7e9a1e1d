"""Whether a change holds: files still parse, tests pass (or fail no more than before)."""

from pathlib import Path

from nestor.runtime.features.small.verifying.snapshot import Snapshot
from nestor.runtime.features.small.verifying.verdict import (
    actual_values,
    change_problem,
    failing_tests,
    holds_literal,
)


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


def test_the_values_the_failing_tests_got_are_read_from_each_runners_output() -> None:
    node = "    not ok 1 - parses kb\n      error: '1000 == 1024'\n      expected: 1024\n      actual: 1000\n"
    jest = '    Expected: "abc"\n    Received: "ab"\n'
    pytest_output = "E       assert 7 == 8\n"
    unittest_output = "AssertionError: 'x-y' != 'x_y'\n"
    cargo = "  left: 42,\n right: 41\n"

    assert actual_values(node) == {"1000"}
    assert actual_values(jest) == {"ab"}
    assert actual_values(pytest_output) == {"7"}
    assert actual_values(unittest_output) == {"x-y"}
    assert actual_values(cargo) == {"42"}
    assert actual_values("      actual: 1\n      actual: true\n") == set()  # everywhere: no hint


def test_a_line_holds_a_literal_only_as_a_whole_number_or_string() -> None:
    assert holds_literal("  kb: 1000,", {"1000"})
    assert not holds_literal("  kb: 10000,", {"1000"}) and not holds_literal("  x = 1000.5", {"1000"})
    assert holds_literal("  sep = 'x-y'", {"x-y"}) and not holds_literal("  sep = 'x-yz'", {"x-y"})

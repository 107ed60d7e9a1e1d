"""Suspects in any language: the failure's frames, what the failing tests call, and what that calls."""

from pathlib import Path

from nestor.runtime.features.small.gathering.code_index import code_index
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.suspects import code_suspects
from nestor.runtime.features.small.understanding.intent import read_intent

LIB = """pub fn matches(req: &str, v: u64) -> bool {
    matches_req(req, v)
}

fn matches_req(req: &str, v: u64) -> bool {
    if req.starts_with('<') { matches_less(v) } else { matches_exact(v) }
}

fn matches_less(v: u64) -> bool {
    v > 2
}

fn matches_exact(v: u64) -> bool {
    v == 2
}

fn unrelated() -> u64 {
    7
}
"""
TESTS = """use lib::matches;

#[test]
fn test_less_than() {
    assert!(matches("<2", 1));
}

#[test]
fn test_exact() {
    assert!(matches("=2", 2));
}
"""
CARGO_FAILURE = """running 2 tests
test test_exact ... ok
test test_less_than ... FAILED

failures:

---- test_less_than stdout ----
thread 'test_less_than' panicked at tests/test_lib.rs:5:5:
assertion failed: matches("<2", 1)
"""


def test_a_failing_rust_test_leads_down_its_calls_to_the_functions_it_runs(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "src" / "lib.rs").write_text(LIB)
    (tmp_path / "tests" / "test_lib.rs").write_text(TESTS)
    reader = ProjectReader(tmp_path)

    intent = read_intent("`<2` matches nothing it should: fix the less-than comparison.")
    found = code_suspects(reader, code_index(reader), intent, CARGO_FAILURE)

    names = [span.name for span in found]
    assert names[0] == "matches"  # what the failing test calls
    assert names[1] == "matches_req"
    # Of what matches_req calls, the one the request's words name comes first.
    assert names[2:4] == ["matches_less", "matches_exact"]
    assert "unrelated" not in names and "test_less_than" not in names
    assert (found[2].path, found[2].start, found[2].end) == ("src/lib.rs", 9, 11)


UNITS_JS = """var map = {
  b: 1,
  kb: 1000,
  mb: 1 << 20,
};
var unused = { x: 1 };

function parse(text) {
  return parseFloat(text) * map[text.slice(-2).toLowerCase()];
}

module.exports = { parse };
"""
UNITS_TEST_JS = """const test = require('node:test');
const assert = require('node:assert');
const { parse } = require('../index.js');

test('parses kb', () => {
  assert.strictEqual(parse('1kb'), 1024);
});
"""
NODE_FAILURE = "not ok 1 - parses kb\n  error: '1000 == 1024'\n  expected: 1024\n  actual: 1000\n"


def test_the_tables_a_suspect_reads_are_suspects_too(tmp_path: Path) -> None:
    # The bug of a table (`kb: 1000`) is in no function: the map of units `parse` reads.
    (tmp_path / "test").mkdir()
    (tmp_path / "index.js").write_text(UNITS_JS)
    (tmp_path / "test" / "units.test.js").write_text(UNITS_TEST_JS)
    reader = ProjectReader(tmp_path)

    found = code_suspects(reader, code_index(reader), read_intent("parse('1kb') is wrong"), NODE_FAILURE)

    assert [(span.name, span.start, span.end) for span in found] == [("parse", 8, 10), ("map", 1, 5)]

"""Suspects in any language: the failure's frames, what the failing tests call, and what that calls."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nestor.runtime.features.small.gathering.code_index import code_index
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.suspects import code_suspects
from nestor.runtime.features.small.gathering.symbols import symbol_index
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
    # What the failing test calls and what that calls, by what they mention of the request.
    assert sorted(names) == ["matches", "matches_exact", "matches_less", "matches_req"]
    # Of what matches_req calls, the one the request's words name comes first.
    assert names.index("matches_less") < names.index("matches_exact")
    assert "unrelated" not in names and "test_less_than" not in names
    less = found[names.index("matches_less")]
    assert (less.path, less.start, less.end) == ("src/lib.rs", 9, 11)


DEEP_LIB = """pub struct Req;

impl Req {
    pub fn parse(text: &str) -> Req { parse_req(text) }
    pub fn matches(&self, v: u64) -> bool { eval::matches_req(self, v) }
}

fn parse_req(text: &str) -> Req { parse_op(text); parse_number(text); Req }
fn parse_op(text: &str) -> u8 { 0 }
fn parse_number(text: &str) -> u64 { 2 }
fn parse_extra(text: &str) -> u64 { parse_number(text) }
"""
DEEP_EVAL = """pub(crate) fn matches_req(req: &Req, v: u64) -> bool {
    matches_impl(req, v)
}

fn matches_impl(req: &Req, v: u64) -> bool {
    match op(req) {
        Op::Exact => matches_exact(v),
        Op::Greater => matches_greater(v),
        Op::Less => matches_less(v),
    }
}

fn matches_exact(v: u64) -> bool { v == 2 }
fn matches_greater(v: u64) -> bool { v > 2 }
fn matches_less(v: u64) -> bool {
    v > 2
}
"""
DEEP_TESTS = """fn req(text: &str) -> Req {
    Req::parse(text)
}

fn assert_match_all(r: &Req, versions: &[u64]) {
    for v in versions {
        assert!(r.matches(*v), "did not match {}", v);
    }
}

#[test]
fn test_less_than() {
    let r = req("<2");
    assert_match_all(&r, &[1]);
}
"""


@pytest.mark.parametrize("project_names", [False, True])
def test_the_tests_own_helpers_lead_to_the_code_and_an_operator_the_request_writes_names_it(
    tmp_path: Path, project_names: bool
) -> None:
    # The failing test calls only its file's helpers; the comparison that is wrong is four
    # calls down, past parsing functions the request does not speak of. Read as the harness
    # reads it (``project_names``), "matches" is the project's name, which matches_less does
    # not mention: what it mentions is `<`'s name, and that puts it before the functions that
    # mention nothing, however near the test they are.
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "src" / "lib.rs").write_text(DEEP_LIB)
    (tmp_path / "src" / "eval.rs").write_text(DEEP_EVAL)
    (tmp_path / "tests" / "test_req.rs").write_text(DEEP_TESTS)
    reader = ProjectReader(tmp_path)
    prompt = "The requirement `<2` now matches 3, which it must not. Fix it without touching the tests."
    names_read = symbol_index(reader).names() if project_names else frozenset()
    intent = read_intent(prompt, (), names_read)

    found = code_suspects(reader, code_index(reader), intent, CARGO_FAILURE, prompt)

    names = [span.name for span in found]
    assert "matches_less" in names, names  # four calls down: found, past the parsing functions
    assert all(names.index("matches_less") < names.index(n) for n in names if n.startswith("parse"))
    assert "matches_greater" not in names or names.index("matches_less") < names.index("matches_greater")
    assert not {"req", "assert_match_all", "test_less_than"} & set(names)  # the tests' own code
    assert [span.path for span in found if span.name == "matches_less"] == ["src/eval.rs"]


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


TIED_JS = """function parse(str) {
  return str.slice(startIndex(str), endIndex(str));
}

function startIndex(str) {
  return 0;
}

function endIndex(str) {
  return str.length;
}

function unusedOne(str) {
  return 1;
}

module.exports = { parse };
"""
TIED_TEST_JS = """const test = require('node:test');
const { parse } = require('../index.js');

test('keeps the last character', () => {
  parse('bc');
});
"""
TIED_FAILURE = "not ok 1 - keeps the last character\n"
_ORDER_SCRIPT = """
import sys
from pathlib import Path
from nestor.runtime.features.small.gathering.code_index import code_index
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.suspects import code_suspects
from nestor.runtime.features.small.gathering.symbols import symbol_index
from nestor.runtime.features.small.understanding.intent import read_intent
reader = ProjectReader(Path(sys.argv[1]))
found = code_suspects(reader, code_index(reader), read_intent("Fix it."), sys.argv[2])
print(" ".join(span.name for span in found))
"""


def test_suspects_that_rank_alike_come_in_the_same_order_on_every_run(tmp_path: Path) -> None:
    # startIndex and endIndex mention the request alike: which is tried first must not depend on
    # the process's string hashing (PYTHONHASHSEED), or a fix takes 10 s on one run and 3 min on
    # the next.
    (tmp_path / "test").mkdir()
    (tmp_path / "index.js").write_text(TIED_JS)
    (tmp_path / "test" / "index.test.js").write_text(TIED_TEST_JS)
    orders = {
        subprocess.run(
            [sys.executable, "-c", _ORDER_SCRIPT, str(tmp_path), TIED_FAILURE],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(6)
    }
    assert len(orders) == 1, orders
    assert {"startIndex", "endIndex"} <= set(orders.pop().split())

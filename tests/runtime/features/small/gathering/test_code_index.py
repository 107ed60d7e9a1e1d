"""Definitions, calls and tests read with tree-sitter, in Python, JavaScript, Rust and Go."""

from pathlib import Path

from nestor.runtime.features.small.gathering.code_index import code_index, words_of
from nestor.runtime.features.small.gathering.reader import ProjectReader

PYTHON = """class Store:
    def load(self):
        return self.parse(read())

    def parse(self, text):
        return text


def read():
    return open_file()
"""
JAVASCRIPT = """var units = { kb: 1024 };

function format(value) {
  return pad(value) + 'KB';
}

const pad = (value) => String(value);

module.exports = { format };
"""
JS_TEST = """var { describe, it } = require('node:test');
var lib = require('../index.js');

describe('format', function () {
  it('pads small numbers', function () {
    lib.format(1, { thousandsSeparator: ',' });
  });
});
"""
RUST = """pub enum Op {
    Exact,
    Greater,
}

impl Op {
    pub fn matches(&self) -> bool {
        helper(1) && Self::other()
    }
}

fn helper(n: u64) -> bool {
    n > 0
}

#[test]
fn test_helper() {
    assert!(helper(2));
}
"""


def test_each_language_gives_its_definitions_calls_and_tests(tmp_path: Path) -> None:
    files = {
        "store.py": PYTHON,
        "index.js": JAVASCRIPT,
        "test/format.js": JS_TEST,
        "src/lib.rs": RUST,
        "README.md": "# x\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    index = code_index(ProjectReader(tmp_path), list(files))

    assert [(d.qualified, d.kind, d.line, d.end) for d in index.defined("parse")] == [
        ("Store.parse", "method", 5, 6)
    ]
    assert {(c.caller.qualified if c.caller else None) for c in index.calls_of("parse")} == {"Store.load"}
    assert [c.caller.name for c in index.calls_of("pad") if c.caller] == ["format"]
    assert [d.kind for d in index.defined("pad")] == ["function"]  # an arrow function is a function
    assert [d.kind for d in index.defined("units")] == ["variable"]
    assert [m.name for m in index.members("Op") if m.kind == "variant"] == ["Exact", "Greater"]
    assert [d.qualified for d in index.defined("matches")] == ["Op.matches"]
    assert {c.caller.qualified for c in index.calls_of("helper") if c.caller} == {"Op.matches", "test_helper"}
    assert {c.name for c in index.calls if c.caller and c.caller.name == "matches"} == {"helper", "other"}
    titles = {test.title: test for test in index.tests}
    assert set(titles) == {"format › pads small numbers", "test_helper"}
    javascript = titles["format › pads small numbers"]
    assert javascript.path == "test/format.js" and javascript.line == 5
    assert "format" in javascript.calls and "thousandsSeparator" in javascript.names
    enclosing = index.enclosing("index.js", 4)
    assert enclosing is not None and enclosing.name == "format"


GO = """package semver

import "errors"

// ErrInvalid is returned for a version that does not parse.
var ErrInvalid = errors.New("invalid version")

const MaxParts = 3

type Version struct {
	Major, Minor int
}

type Comparer interface {
	Compare(other Version) int
}

type Op int

func Parse(text string) (*Version, error) {
	if text == "" {
		return nil, ErrInvalid
	}
	return &Version{Major: atoi(text)}, nil
}

func (v *Version) Compare(other Version) int {
	return compareInts(v.Major, other.Major)
}

func (v Version) String() string { return "" }

func atoi(text string) int { return len(text) }

func compareInts(a, b int) int { return a - b }
"""
GO_TEST = """package semver

import "testing"

func TestParse(t *testing.T) {
	v, err := Parse("1.2")
	if err != nil || v.Compare(Version{Major: 1}) != 0 {
		t.Fatalf("got %v", v)
	}
}

func helperForTests() {}
"""


def test_go_gives_its_functions_methods_with_their_receiver_types_calls_and_tests(tmp_path: Path) -> None:
    files = {"semver.go": GO, "semver_test.go": GO_TEST}
    for name, text in files.items():
        (tmp_path / name).write_text(text)

    index = code_index(ProjectReader(tmp_path), list(files))

    kinds = {d.qualified: d.kind for d in index.definitions if d.path == "semver.go"}
    assert kinds == {
        "ErrInvalid": "variable",
        "MaxParts": "variable",
        "Version": "struct",
        "Comparer": "trait",
        "Comparer.Compare": "method",
        "Op": "class",
        "Parse": "function",
        "Version.Compare": "method",
        "Version.String": "method",
        "atoi": "function",
        "compareInts": "function",
    }
    assert [(d.line, d.end) for d in index.defined("Parse")] == [(20, 25)]
    assert {c.caller.qualified for c in index.calls_of("compareInts") if c.caller} == {"Version.Compare"}
    assert {c.caller.qualified for c in index.calls_of("atoi") if c.caller} == {"Parse"}
    assert [test.title for test in index.tests] == ["TestParse"]
    assert {"Parse", "Compare", "Fatalf"} <= index.tests[0].calls
    enclosing = index.enclosing("semver.go", 28)
    assert enclosing is not None and enclosing.qualified == "Version.Compare"


def test_words_of_split_identifiers_and_titles() -> None:
    assert words_of("thousandsSeparator") == ["thousands", "separator"]
    assert words_of("test_low_stock") == ["test", "low", "stock"]
    assert words_of('with "maxAge" option') == ["with", "max", "age", "option"]

"""Questions beyond the nine kinds, end to end: answers nestor reads off the code or git, refusals,
documentation edits and follow-ups (a scripted model, real tools, a real project on disk)."""

import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage

from nestor.testing import ScriptedModel, reply
from tests.runtime.features.small.test_harness import _calc_project, _coder, _prompt_of
from tests.runtime.support import Harness, scripted

INDEX_JS = """function pad(text, width) {
  return text.padStart(width);
}

function format(value) {
  return pad(String(value), 6);
}

module.exports = { pad, format };
"""
TEST_JS = """const test = require('node:test');
const assert = require('node:assert');
const { pad, format } = require('../index.js');

test('pads to the width', () => {
  assert.strictEqual(pad('ab', 4), '  ab');
});

test('formats numbers', () => {
  assert.strictEqual(format(12), '    12');
});
"""


def _js_project(root: Path) -> Path:
    (root / "test").mkdir(parents=True)
    (root / "index.js").write_text(INDEX_JS)
    (root / "test" / "index.test.js").write_text(TEST_JS)
    (root / "package.json").write_text('{"name": "padder", "scripts": {"test": "node --test"}}\n')
    return root


async def test_who_calls_a_function_is_read_off_the_code_without_the_model(tmp_path: Path) -> None:
    # Found on a JavaScript package: "which functions call X" listed X itself and non-callers.
    root = _js_project(tmp_path / "project")
    model = ScriptedModel([])  # any model request would fail the run
    result = await _coder(Harness(root), model, root).run("Which functions call pad?")
    assert result.text == (
        "`pad` is called by:\n- `format` (index.js:6)\nThe tests call it too (1 call, in test/index.test.js)."
    )
    assert model.requests == []


SEMVER_GO = """package semver

type Version struct {
	Major int
}

func Parse(text string) Version {
	return Version{Major: len(text)}
}

func (v *Version) Compare(other Version) int {
	return compareInts(v.Major, other.Major)
}

func compareInts(a, b int) int {
	return a - b
}
"""
SEMVER_TEST_GO = """package semver

import "testing"

func TestCompare(t *testing.T) {
	v := Parse("abc")
	if v.Compare(Version{Major: 3}) != 0 {
		t.Fatal("not equal")
	}
}
"""


def _go_project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "go.mod").write_text("module example.com/semver\n\ngo 1.21\n")
    (root / "semver.go").write_text(SEMVER_GO)
    (root / "semver_test.go").write_text(SEMVER_TEST_GO)
    return root


async def test_in_go_callers_and_covering_tests_are_read_off_the_code(tmp_path: Path) -> None:
    root = _go_project(tmp_path / "project")
    model = ScriptedModel([])
    callers = await _coder(Harness(root), model, root).run("Which functions call compareInts?")
    covering = await _coder(Harness(root), model, root).run("Which test covers Compare?")
    assert callers.text == "`compareInts` is called by:\n- `Version.Compare` (semver.go:12)", callers.text
    assert covering.text == "The tests that cover `Compare`:\n- `TestCompare` (semver_test.go:5)"
    assert model.requests == []


async def test_a_go_function_gets_its_comment_above_it_tested_or_said_untested(tmp_path: Path) -> None:
    root = _go_project(tmp_path / "project")
    model = ScriptedModel([reply("Returns how far a is above b.")])
    result = await _coder(Harness(root), model, root).run(
        "Add a one-line comment above the function compareInts saying what it does. Change nothing else."
    )
    expected = SEMVER_GO.replace("func compareInts", "// Returns how far a is above b.\nfunc compareInts")
    assert (root / "semver.go").read_text() == expected
    assert result.text.startswith("Changed semver.go."), result.text
    if shutil.which("go") is None:  # no Go here: the change is kept, and said to be untested
        assert "The tests could not run here (`go test ./...`:" in result.text, result.text


async def test_asked_whether_the_tests_pass_nestor_runs_them_and_says_which_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model asked "do the tests pass?" answers from the code it is shown: a guess.
    root = _calc_project(tmp_path / "project", monkeypatch)  # add() subtracts: test_add fails
    model = ScriptedModel([])

    failing = await _coder(Harness(root), model, root).run("Do the tests pass?")
    (root / "calc.py").write_text((root / "calc.py").read_text().replace("a - b", "a + b"))
    passing = await _coder(Harness(root), model, root).run("Run the tests.")

    assert failing.text.startswith("The tests fail (`"), failing.text
    assert ": 1 failed.\n- `tests/test_calc.py::test_add`" in failing.text
    assert "assert -1 == 5" in failing.text
    assert passing.text.startswith("The tests pass (`") and "pytest" in passing.text, passing.text
    assert " -x" not in failing.text.splitlines()[0]  # every failing test is named, not the first
    assert model.requests == []


async def test_the_tests_covering_a_function_are_found_by_name_and_by_what_they_call(tmp_path: Path) -> None:
    root = _js_project(tmp_path / "project")
    model = ScriptedModel([])
    result = await _coder(Harness(root), model, root).run("Which test covers format?")
    assert result.text == "The tests that cover `format`:\n- `formats numbers` (test/index.test.js:9)"


async def test_every_place_that_raises_is_listed_with_its_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(
        "class BadInput(ValueError):\n    pass\n\n\ndef add(a, b):\n    if a is None:\n"
        "        raise BadInput('a')\n    return a + b\n\n\ndef neg(a):\n    raise BadInput('neg')\n"
    )
    (root / "tests" / "test_raise.py").write_text(
        "from calc import BadInput\n\n\ndef test_x():\n    raise BadInput()\n"
    )
    result = await _coder(Harness(root), ScriptedModel([]), root).run(
        "List every place in the code that raises BadInput."
    )
    assert result.text == (
        "2 places:\n- calc.py:7 in `add`: `raise BadInput('a')`\n"
        "- calc.py:12 in `neg`: `raise BadInput('neg')`"
    )


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Ada", "-c", "user.email=a@b.c", "-c", "commit.gpgsign=false", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _committed_js_project(root: Path) -> Path:
    """The JavaScript project, a git repository with one commit of it."""
    _js_project(root)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "First version")
    return root


def _commits(root: Path) -> int:
    log = subprocess.run(["git", "log", "--oneline"], cwd=root, capture_output=True, text=True, check=True)
    return len(log.stdout.splitlines())


async def test_a_question_about_the_history_sees_the_log_the_patches_and_the_uncommitted_diff(
    tmp_path: Path,
) -> None:
    root = _committed_js_project(tmp_path / "project")
    (root / "index.js").write_text(INDEX_JS.replace("6)", "8)"))
    _git(root, "commit", "-qam", "Widen the format to 8")
    (root / "index.js").write_text(INDEX_JS.replace("6)", "10)"))
    model = ScriptedModel([reply("The last commit widened format to 8; you are widening it to 10.")])

    result = await _coder(Harness(root), model, root).run(
        "What did the last commit change, and what do my changes do?"
    )

    assert result.text == (
        "The last commit widened format to 8; you are widening it to 10.\n\n"
        "Not committed yet: index.js (in `format`): `return pad(String(value), 8);` becomes "
        "`return pad(String(value), 10);`."
    )
    prompt = _prompt_of(model.requests[0].messages)
    assert "Widen the format to 8" in prompt and "First version" in prompt
    assert "function format(value)" in prompt  # the hunk's header names its function
    assert "+  return pad(String(value), 10);" in prompt.split("<uncommitted-changes>")[1]


@pytest.mark.parametrize(
    "request_text",
    ["Write a commit message for my uncommitted changes.", "Commit my changes with a good message."],
)
async def test_a_commit_message_is_written_from_the_diff_and_no_file_or_commit_is_made(
    tmp_path: Path, request_text: str
) -> None:
    # "Write" opened a change: the request went to the edit step, which edits project files.
    root = _committed_js_project(tmp_path / "project")
    (root / "index.js").write_text(INDEX_JS.replace("6)", "10)"))
    model = ScriptedModel([reply("Widen format's padding to 10\n\nNumbers now pad to ten characters.")])

    result = await _coder(Harness(root), model, root).run(request_text)

    asked_to_commit = request_text.startswith("Commit")
    opening = "I did not make the commit" if asked_to_commit else "Widen format's padding to 10"
    assert result.text.startswith(opening), result.text
    assert "Widen format's padding to 10" in result.text
    assert (root / "index.js").read_text() == INDEX_JS.replace("6)", "10)")  # nothing else changed
    assert _commits(root) == 1  # no commit made
    assert "+  return pad(String(value), 10);" in _prompt_of(model.requests[0].messages)


async def test_a_request_to_act_outside_the_project_is_refused_touching_nothing(tmp_path: Path) -> None:
    root = _js_project(tmp_path / "project")
    model = ScriptedModel([])
    agent = _coder(Harness(root), model, root)
    result = await agent.run("Publish this package to the npm registry under my account.")
    assert result.text.startswith("I won't do that: it acts outside this project")
    assert model.requests == [] and (root / "index.js").read_text() == INDEX_JS


async def test_a_comment_is_added_above_the_function_and_nothing_else_changes(tmp_path: Path) -> None:
    root = _js_project(tmp_path / "project")
    model = ScriptedModel([reply('"Pads text on the left to the given width"')])
    result = await _coder(Harness(root), model, root).run(
        "Add a one-line comment above the function pad saying what it does. Change nothing else."
    )
    assert (root / "index.js").read_text() == "// Pads text on the left to the given width.\n" + INDEX_JS
    assert result.text.startswith("Changed index.js."), result.text
    assert "function pad(text, width) {" in _prompt_of(model.requests[0].messages)


async def test_a_docstring_is_the_first_line_of_a_python_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    model = ScriptedModel([reply("Return the sum of a and b.")])
    await _coder(Harness(root), model, root).run(
        "Add a one-line docstring to add in calc.py. Change nothing else."
    )
    assert (
        root / "calc.py"
    ).read_text() == 'def add(a, b):\n    """Return the sum of a and b."""\n    return a + b\n'


async def test_a_follow_up_is_answered_with_the_earlier_exchange_and_its_names(tmp_path: Path) -> None:
    root = _js_project(tmp_path / "project")
    model = ScriptedModel([reply("pad is in index.js:1."), reply("It pads on the left.")])
    agent = _coder(Harness(root), model, root)
    await agent.run("Where is pad defined?")
    result = await agent.run("And which side does it pad on?")
    assert result.text.startswith("It pads on the left.")
    prompt = _prompt_of(model.requests[1].messages)
    assert "Earlier question: Where is pad defined?\nYour earlier answer: pad is in index.js:1." in prompt
    assert "text.padStart(width)" in prompt  # the earlier question's name was searched again


async def test_an_error_message_the_question_quotes_is_traced_to_the_line_that_makes_it(
    tmp_path: Path,
) -> None:
    root = _js_project(tmp_path / "project")
    (root / "index.js").write_text(
        INDEX_JS.replace(
            "function pad(text, width) {\n",
            "function pad(text, width) {\n  if (width > 80) {\n"
            "    throw new RangeError('width ' + width + ' is wider than the screen');\n  }\n",
        )
    )
    model = ScriptedModel([reply("The width is over 80.")])
    result = await _coder(Harness(root), model, root).run(
        "I get `RangeError: width 120 is wider than the screen` from pad. Why, and where is it thrown?"
    )
    source = (
        "The message comes from: `index.js:3` in `pad`: `throw new RangeError('width ' + width + ' is wider"
    )
    assert source in result.text, result.text
    assert source in _prompt_of(model.requests[0].messages)


async def test_a_question_with_an_example_is_answered_with_the_call_run_on_it(tmp_path: Path) -> None:
    # Found on cookie: "what does parse do with a value like `a=%E0%A4%A`?" was answered from the
    # code alone, wrongly; running parse on the example says what it does.
    root = _js_project(tmp_path / "project")
    model = ScriptedModel([reply("It pads the text on the left.")])

    result = await _coder(Harness(root), model, root).run("What does format do with a value like 'ab'?")

    ran = "Run in the project's JavaScript (node):\n>>> format(\"ab\")\n'    ab'"
    assert ran in result.text, result.text
    assert ran in _prompt_of(model.requests[0].messages)  # the answer step saw it


async def test_the_function_a_questions_example_calls_is_shown_whole_and_run(tmp_path: Path) -> None:
    # Found on cookie: "what does parse do with a value like `a=%E0%A4%A`" was shown the file's
    # header, where "format" (here) is on many comment lines, instead of the function it ran.
    root = _js_project(tmp_path / "project")
    header = "".join(f"// format note {n}: format, format and format again\n" for n in range(40))
    (root / "index.js").write_text(header + INDEX_JS)
    seen: list[list[ModelMessage]] = []
    model = scripted(["It pads the value to 6 characters."], requests=seen)
    result = await _coder(Harness(root), model, root).run("What does format do with a value like `12`?")
    prompt = _prompt_of(seen[0])
    assert "index.js lines 45-47 (function format):" in prompt, prompt
    assert ">>> format(12)\n'    12'" in prompt and result.text.startswith("It pads")


async def test_the_short_functions_the_called_one_calls_are_shown_too(tmp_path: Path) -> None:
    # Found on cookie: what parse does with a broken value is in the try/catch of tryDecode, which
    # parse calls; the answer saw parse alone and never named it. A method of some other value
    # of the same name as a project function (`names.get`) is not the project's.
    root = _js_project(tmp_path / "project")
    filler = "".join(f"// note {n}\n" for n in range(60))
    (root / "index.js").write_text(
        "function parse(text) {\n  const names = new Map();\n  names.get(text);\n"
        "  return tryDecode(text);\n}\n"
        + filler
        + "function tryDecode(text) {\n  try {\n    return decodeURIComponent(text);\n  } catch (e) {\n"
        "    return text;\n  }\n}\n\n"
        + filler
        + "function get(key) {\n  return key;\n}\n\nmodule.exports = { parse, get };\n"
    )
    seen: list[list[ModelMessage]] = []
    model = scripted(["tryDecode keeps it."], requests=seen)
    await _coder(Harness(root), model, root).run("What does parse do with a value like `%E0%A4%A`?")
    prompt = _prompt_of(seen[0])
    assert "(function tryDecode):" in prompt and "catch (e)" in prompt, prompt
    assert "function get(key)" not in prompt

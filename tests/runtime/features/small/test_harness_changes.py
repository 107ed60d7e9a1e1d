"""Changes that cannot do harm: the files a request allows, verified, and undone whole when they fail.

End to end through the harness, with a scripted model, real tools and a real project on disk.
"""

import asyncio
import json
import shutil
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from nestor.permissions import PermissionPolicy
from nestor.runtime.factory.toolset import compact_coder_tools
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.harness import SmallModelHarness
from nestor.runtime.kernel.hooks import Budgets
from nestor.testing import ScriptedModel, reply
from tests.runtime.features.small.test_harness import (
    CALC,
    TEST_CALC,
    AnsweringModel,
    FillingModel,
    _calc_project,
    _coder,
    _prompt_of,
)
from tests.runtime.features.small.test_harness_questions import INDEX_JS as GOOD_INDEX_JS
from tests.runtime.features.small.test_harness_questions import TEST_JS as GOOD_TEST_JS
from tests.runtime.features.small.test_harness_questions import _js_project as good_js_project
from tests.runtime.support import Harness

INDEX_JS = """function pad(text, width) {
  return text.padStart(width - 2);
}

module.exports = { pad };
"""
TEST_JS = """const test = require('node:test');
const assert = require('node:assert');
const { pad } = require('../index.js');

test('pads to the width', () => {
  assert.strictEqual(pad('ab', 4), '  ab');
});
"""
# What the 1.5B model did on a JavaScript package: Python-like text in the test file.
HARMFUL = (
    "test/index.test.js\n<<<<<<< SEARCH\n  assert.strictEqual(pad('ab', 4), '  ab');\n=======\n"
    "    assert pad('ab', 4) == ' ab'\n>>>>>>> REPLACE\nFixed the test."
)
WRONG_FIX = (
    "index.js\n<<<<<<< SEARCH\n  return text.padStart(width - 2);\n=======\n"
    "  return text.padEnd(width);\n>>>>>>> REPLACE\nPadded at the end."
)
RIGHT_FIX = (
    "index.js\n<<<<<<< SEARCH\n  return text.padStart(width - 2);\n=======\n"
    "  return text.padStart(width);\n>>>>>>> REPLACE\nPadded to the full width."
)

needs_node = pytest.mark.skipif(shutil.which("npm") is None, reason="needs Node.js and npm")


def _js_project(root: Path) -> Path:
    (root / "test").mkdir(parents=True)
    (root / "index.js").write_text(INDEX_JS)
    (root / "test" / "index.test.js").write_text(TEST_JS)
    (root / "package.json").write_text(json.dumps({"name": "padder", "scripts": {"test": "node --test"}}))
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        # The test harness's store (data/) and Python's caches are not the project's files.
        if path.is_file() and not {"data", "__pycache__"} & set(path.relative_to(root).parts)
    }


@needs_node
async def test_a_fix_the_request_keeps_out_of_the_tests_never_touches_them_and_fails_undone(
    tmp_path: Path,
) -> None:
    # Issue 30: asked to fix a JavaScript bug "in index.js, not in the tests", the harness wrote
    # Python-like text into the test file and reported the change.
    root = _js_project(tmp_path / "project")
    before = _tree(root)
    model = ScriptedModel([reply(HARMFUL), reply(WRONG_FIX), reply(HARMFUL)])
    agent = _coder(Harness(root), model, root)

    result = await agent.run("The pad function is off by two. Fix the bug in index.js, not in the tests.")

    assert _tree(root) == before  # the wrong fix was undone too: the tree is as it was
    assert result.text.startswith("I could not make a working change, so I left every file as it was.")
    assert "What failed: the tests (`npm test --silent`) fail after it" in result.text, result.text
    assert "What I tried: Changed index.js. Padded at the end." in result.text
    assert "pass." not in result.text
    # The model was told why its edit of the test was not made.
    second = "".join(str(part.content) for part in model.requests[1].messages[-1].parts)  # type: ignore[union-attr]
    assert "test/index.test.js is a test file" in second


@needs_node
async def test_a_fix_in_the_file_named_passes_and_the_tests_stay_as_they_were(tmp_path: Path) -> None:
    root = _js_project(tmp_path / "project")
    model = ScriptedModel([reply(HARMFUL), reply(RIGHT_FIX)])
    agent = _coder(Harness(root), model, root)

    result = await agent.run("The pad function is off by two. Fix the bug in index.js, not in the tests.")

    assert (root / "index.js").read_text() == INDEX_JS.replace("width - 2", "width")
    assert (root / "test" / "index.test.js").read_text() == TEST_JS
    assert result.text.startswith("Changed index.js."), result.text
    assert "Tests (`npm test --silent`): pass." in result.text


@needs_node
async def test_a_change_in_a_project_whose_test_runner_is_not_installed_is_kept_and_said_untested(
    tmp_path: Path,
) -> None:
    # A project brought without its dependencies: `npm test` runs `jest`, which is not there
    # (`sh: 1: jest: not found`, exit 127). Every change was undone as failing its tests, the
    # README's licence line included, and a fix was looked for in a failure that names no test.
    root = _js_project(tmp_path / "project")
    (root / "package.json").write_text(json.dumps({"name": "padder", "scripts": {"test": "jest"}}))
    (root / "README.md").write_text("# padder\n\nPads text.\n")
    blocks = (
        "README.md\n<<<<<<< SEARCH\nPads text.\n=======\nPads text.\n\nLicence: MIT.\n>>>>>>> REPLACE\nDone."
    )
    model = ScriptedModel([reply(blocks)])
    agent = _coder(Harness(root), model, root)

    result = await agent.run("Say in README.md that its licence is MIT. Change no other file.")

    assert (root / "README.md").read_text() == "# padder\n\nPads text.\n\nLicence: MIT.\n"
    assert result.text.startswith("Changed README.md."), result.text
    assert "The tests could not run here (`npm test --silent`: sh: 1: jest: not found)" in result.text
    assert "not tested" in result.text and "pass." not in result.text
    assert len(model.requests) == 1


@needs_node
async def test_a_javascript_test_asked_for_is_added_at_the_end_of_the_file_testing_that_code(
    tmp_path: Path,
) -> None:
    # Tests of code that exists, outside Python: appended to the test file whose tests call the
    # code, kept only when the tests pass; a failing first try is taken out and written again.
    root = good_js_project(tmp_path / "project")
    failing = "```js\ntest('pads one character', () => {\n  assert.strictEqual(pad('a', 3), 'a  ');\n});\n```"
    passing = failing.replace("'a  '", "'  a'")
    model = ScriptedModel([reply(failing), reply(passing)])

    result = await agent_run(root, model, "Add a test that pad pads a single character to a width of 3.")

    assert (root / "index.js").read_text() == GOOD_INDEX_JS  # the code under test never changes
    expected = (
        GOOD_TEST_JS
        + "\ntest('pads one character', () => {\n  assert.strictEqual(pad('a', 3), '  a');\n});\n"
    )
    assert (root / "test" / "index.test.js").read_text() == expected
    assert result.startswith("Added a test at the end of test/index.test.js:"), result
    assert "Tests (`npm test --silent`): pass." in result
    first, retry = (_prompt_of(request.messages) for request in model.requests)
    assert "function pad(text, width) {" in first and "require('../index.js')" in first
    assert "Your test failed, so it was taken out again" in retry


async def test_a_change_to_one_named_function_is_the_function_written_again_with_its_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Asked for SEARCH/REPLACE blocks, the 1.5B model loses the format; the function whole, it
    # writes. A first version that breaks the tests is undone and written again, shown why.
    root = _calc_project(tmp_path / "project", monkeypatch)
    good_calc = CALC.replace("a - b", "a + b")
    (root / "calc.py").write_text("import math\n\n\n" + good_calc + "\n\ndef other():\n    return 1\n")
    broken = "```python\ndef add(a, b):\n    return _sum(a, b)\n```"
    # As the model wrote them on the eval: the prompt's markup echoed, the module's imports again.
    helper = (
        '```python\n<function file="calc.py">\nimport math\n\n\ndef _sum(a, b):\n    return a + b\n\n\n'
        'def add(a, b):\n    """Add two numbers."""\n    return _sum(a, b)\n</function>\n```\n'
        "The sum is taken by a helper."
    )
    model = ScriptedModel([reply(broken), reply(helper)])

    result = await agent_run(root, model, "Extract the sum in add into a helper function _sum(a, b).")

    assert (root / "calc.py").read_text() == (
        'import math\n\n\ndef _sum(a, b):\n    return a + b\n\n\ndef add(a, b):\n    """Add two numbers."""\n'
        "    return _sum(a, b)\n\n\ndef other():\n    return 1\n"
    )
    assert result.startswith(
        "Changed calc.py.\nRewrote `add` (calc.py). The sum is taken by a helper.\nTests (`"
    ), result
    assert "Tests (`" in result and "pass." in result
    first = _prompt_of(model.requests[0].messages)
    retry = _prompt_of(model.requests[1].messages)
    assert '<function file="calc.py">\ndef add(a, b):' in first and "def other" not in first
    assert "made the tests fail, so it was undone" in retry and "NameError" in retry


@needs_node
async def test_a_test_asked_for_goes_inside_the_suite_the_test_file_ends_with(tmp_path: Path) -> None:
    # Found on bytes: its tests sit in a describe block that defines `mb`; a test appended after
    # the block could not see it, and failed each time.
    root = good_js_project(tmp_path / "project")
    suite = (
        "const { describe, it } = require('node:test');\nconst assert = require('node:assert');\n"
        "const { pad } = require('../index.js');\n\ndescribe('pad', function () {\n  var width = 4;\n\n"
        "  it('pads to the width', function () {\n"
        "    assert.strictEqual(pad('ab', width), '  ab');\n  });\n});\n"
    )
    (root / "test" / "index.test.js").write_text(suite)
    new_test = "it('pads one character', function () {\n  assert.strictEqual(pad('a', width), '   a');\n});"
    written = f"```js\n{new_test}\n```"
    model = ScriptedModel([reply(written)])

    result = await agent_run(root, model, "Add a test that pad pads a single character to the width.")

    expected = suite.replace(
        "  });\n});\n",
        "  });\n\n" + textwrap.indent(new_test, "  ") + "\n});\n",
    )
    assert (root / "test" / "index.test.js").read_text() == expected
    assert result.startswith("Added a test at the end of test/index.test.js"), result
    assert "inside the file's last suite" in _prompt_of(model.requests[0].messages)


@needs_node
async def test_a_javascript_function_written_again_must_still_define_itself(tmp_path: Path) -> None:
    root = good_js_project(tmp_path / "project")
    helper_only = "```js\nfunction fill(text) {\n  return text;\n}\n```"
    rewritten = (
        "```js\nfunction pad(text, width, fill = ' ') {\n  return text.padStart(width, fill);\n}\n```\n"
        "pad takes the fill character."
    )
    model = ScriptedModel([reply(helper_only), reply(rewritten)])

    result = await agent_run(root, model, "Give pad an optional `fill` character parameter (default ' ').")

    assert (root / "index.js").read_text() == GOOD_INDEX_JS.replace(
        "function pad(text, width) {\n  return text.padStart(width);",
        "function pad(text, width, fill = ' ') {\n  return text.padStart(width, fill);",
    )
    assert result.startswith("Changed index.js.\nRewrote `pad` (index.js). pad takes the fill character."), (
        result
    )
    retry = _prompt_of(model.requests[1].messages)
    assert "Your version was not used: it does not define `pad` any more." in retry


async def test_a_change_the_tests_fail_is_undone_whole_new_files_included(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_bytes(CALC.replace("a - b", "a + b").encode().replace(b"\n", b"\r\n"))
    before = _tree(root)
    blocks = (
        "calc.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return a + b + 1\n>>>>>>> REPLACE\n"
        "helpers/scale.py\n<<<<<<< SEARCH\n=======\ndef scale(x):\n    return x * 2\n>>>>>>> REPLACE\n"
        "Added scale."
    )
    agent = _coder(Harness(root), ScriptedModel([reply(blocks)] * 3), root)

    result = await agent.run("Add a scale helper in a new module helpers/scale.py.")

    assert _tree(root) == before  # CRLF line ends included; the new module and its folder gone
    assert not (root / "helpers").exists()
    assert result.text.startswith("I could not make a working change"), result.text
    assert "What I tried: Changed calc.py, helpers/scale.py." in result.text


async def test_change_nothing_else_lets_only_the_functions_file_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    (root / "other.py").write_text("def other():\n    return 1\n")
    blocks = (
        'calc.py\n<<<<<<< SEARCH\n    """Add two numbers."""\n=======\n    """Return the sum of a and b."""\n'
        ">>>>>>> REPLACE\n"
        'other.py\n<<<<<<< SEARCH\ndef other():\n=======\ndef other():\n    """Other."""\n>>>>>>> REPLACE\n'
        "tests/test_calc.py\n<<<<<<< SEARCH\ndef test_add():\n=======\ndef test_add():\n    pass\n"
        ">>>>>>> REPLACE\nDocumented add."
    )
    agent = _coder(Harness(root), ScriptedModel([reply(blocks)]), root)

    result = await agent.run("Make the docstring of `add` say it returns the sum; change nothing else.")

    assert '"""Return the sum of a and b."""' in (root / "calc.py").read_text()
    assert (root / "other.py").read_text() == "def other():\n    return 1\n"
    assert (root / "tests" / "test_calc.py").read_text() == TEST_CALC
    assert result.text.startswith("Changed calc.py."), result.text


async def test_without_tests_a_change_that_breaks_the_syntax_is_undone(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "index.js").write_text(INDEX_JS)
    python_in_js = (
        "index.js\n<<<<<<< SEARCH\n  return text.padStart(width - 2);\n=======\n"
        "  return text.padStart(width)\n  def helper(): pass\n>>>>>>> REPLACE\nFixed."
    )
    agent = _coder(Harness(root), ScriptedModel([reply(python_in_js)]), root)

    result = await agent.run("Fix the off-by-two in pad in index.js.")

    assert (root / "index.js").read_text() == INDEX_JS
    assert "What failed: it left a syntax error in index.js" in result.text, result.text


@needs_node
async def test_a_javascript_bug_is_fixed_by_filling_in_a_line_of_the_function_the_test_calls(
    tmp_path: Path,
) -> None:
    root = _js_project(tmp_path / "project")
    (root / "index.js").write_text("// Padding.\n\n" + INDEX_JS)
    fixed = "  return text.padStart(width);\n"
    model = FillingModel([fixed, fixed, fixed])
    agent = _coder(Harness(root), model, root)

    result = await agent.run("pad gives two spaces too few. Please fix it.")

    assert (root / "index.js").read_text() == "// Padding.\n\n" + INDEX_JS.replace("width - 2", "width")
    assert (root / "test" / "index.test.js").read_text() == TEST_JS
    assert "In pad (index.js:3)" in result.text and "pass" in result.text, result.text
    # The gap was the function's line, shown with the code around it, as the model fills in code.
    before, after = model.gaps[0]
    assert before.endswith("function pad(text, width) {\n") and after.startswith("}\n")


async def test_a_short_file_the_request_names_is_shown_whole_and_is_the_only_file_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    readme = "# calc\n\n" + "".join(f"Line {n} of the manual.\n" for n in range(60)) + "The end.\n"
    (root / "README.md").write_text(readme)
    blocks = (
        "README.md\n<<<<<<< SEARCH\nThe end.\n=======\nThe end.\n\n## Licence\n\nMIT.\n>>>>>>> REPLACE\n"
        "calc.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\nAdded it."
    )
    model = ScriptedModel([reply(blocks)])
    agent = _coder(Harness(root), model, root)

    result = await agent.run("Say in README.md that its licence is MIT. Change no other file.")

    assert (root / "README.md").read_text() == readme + "\n## Licence\n\nMIT.\n"
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    assert result.text.startswith("Changed README.md."), result.text
    assert "The end." in "".join(str(part.content) for part in model.requests[0].messages[-1].parts)  # type: ignore[union-attr]


async def test_text_asked_at_the_end_of_a_file_is_written_by_the_model_and_appended_by_nestor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found on the eval: asked for a Licence section at the end of README.md, the model wrote
    # SEARCH/REPLACE blocks for a placeholder path and lines the file does not have, until the
    # time ran out. Now it writes the new text only, and nestor appends it.
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    readme = "# calc\n\n" + "".join(f"Line {n} of the manual.\n" for n in range(60)) + "The end.\n\n"
    (root / "README.md").write_text(readme)
    model = ScriptedModel([reply("```markdown\n## Licence\n\nThis project is under the MIT licence.\n```")])
    agent = _coder(Harness(root), model, root)

    result = await agent.run(
        'Add a short "Licence" section at the end of README.md saying the project is under the MIT '
        "licence. Change no other file."
    )

    expected = readme.rstrip("\n") + "\n\n## Licence\n\nThis project is under the MIT licence.\n"
    assert (root / "README.md").read_text() == expected
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    assert result.text.startswith("Changed README.md.") and "at the end of README.md" in result.text
    shown = "".join(str(part.content) for part in model.requests[0].messages[-1].parts)  # type: ignore[union-attr]
    assert "The end." in shown and "Line 20 of the manual." not in shown  # the file's end only
    assert len(model.requests) == 1


async def test_a_change_the_time_budget_stops_half_way_is_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))  # the tests pass to begin with
    before = _tree(root)
    wrong = "calc.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return a * b\n>>>>>>> REPLACE\nDone."

    replies = [wrong]

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        if not replies:
            await asyncio.sleep(120)  # the second attempt never comes back: the budget ends the run
        yield replies.pop()

    model = FunctionModel(stream_function=stream, model_name="scripted-model")
    agent = Harness(root).agent(
        model,
        compact_coder_tools(),
        policy=PermissionPolicy(project_root=str(root), yolo=True),
        harness=SmallModelHarness(ProjectReader(root)),
        budgets=Budgets(max_time_s=30),
    )

    result = await agent.run("Make add work for negative numbers too.")

    assert result.stop_reason == "timeout"
    edits = [
        part.args
        for message in agent.history
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.tool_name == "edit"
    ]
    assert edits, "the first attempt's edit was made"
    assert _tree(root) == before  # and it is gone with the run


FORMAT_JS = """function format(value) {
  const text = String(value);
  const trimmed = text.trim();
  const width = 6;
  const padded = pad(trimmed, width);
  return padded;
}

function pad(text, width) {
  return text.padStart(width - 2);
}

module.exports = { pad, format };
"""
FORMAT_TEST_JS = """const test = require('node:test');
const assert = require('node:assert');
const { format } = require('../index.js');

test('formats to six', () => {
  assert.strictEqual(format(12), '    12');
});
"""


@needs_node
async def test_without_a_tracer_the_suspects_lines_are_tried_in_turns_so_a_helper_comes_early(
    tmp_path: Path,
) -> None:
    root = _js_project(tmp_path / "project")
    (root / "index.js").write_text(FORMAT_JS)
    (root / "test" / "index.test.js").write_text(FORMAT_TEST_JS)
    fixed = "  return text.padStart(width);\n"
    model = AnsweringModel(lambda before: fixed if before.endswith("function pad(text, width) {\n") else None)
    agent = _coder(Harness(root), model, root)

    result = await agent.run("format gives two spaces too few. Fix it, not the test.")

    assert (root / "index.js").read_text() == FORMAT_JS.replace("width - 2", "width")
    assert "In pad (index.js:9)" in result.text, result.text
    # Three lines of format (what the test calls), then pad's: not every line of format first.
    assert len([before for before, _ in model.gaps if "function pad" not in before.splitlines()[-1]]) == 3


TRIM_JS = """function trimEnd(str, index, min) {
  while (index > min) {
    var code = str.charCodeAt(--index);
    if (code !== 0x20 && code !== 0x09) return index;
  }
  return min;
}

function value(str) {
  return str.slice(0, trimEnd(str, str.length, 0));
}

module.exports = { value };
"""
TRIM_TEST_JS = """const test = require('node:test');
const assert = require('node:assert');
const { value } = require('../index.js');

test('keeps the last character', () => {
  assert.strictEqual(value('bc  '), 'bc');
});
"""


@needs_node
async def test_a_one_token_bug_is_fixed_by_a_repair_template_before_the_model_is_asked(
    tmp_path: Path,
) -> None:
    # Without a tracer the order of the suspect lines is a guess, and a fill-in by the model
    # costs ten or more test runs: every planned line's one-token repairs are tried first.
    # Found on cookie and the semver crate: the model's fill-ins of the lines before the bug
    # took the three minutes (eight on Rust) that sixteen (four) test runs would have needed.
    root = _js_project(tmp_path / "project")
    (root / "index.js").write_text(TRIM_JS)
    (root / "test" / "index.test.js").write_text(TRIM_TEST_JS)
    model = AnsweringModel(lambda before: "    return index;\n")  # the bug again, or the same line

    result = await agent_run(root, model, "value('bc  ') loses its last character. Fix it, not the tests.")

    assert (root / "index.js").read_text() == TRIM_JS.replace("return index;", "return index + 1;")
    assert (root / "test" / "index.test.js").read_text() == TRIM_TEST_JS
    assert "is now `if (code !== 0x20 && code !== 0x09) return index + 1;`" in result, result
    assert "pass" in result
    assert model.gaps == []  # no fill-in was needed


UNITS_JS = """var map = {
  b: 1,
  kb: 1000,
  mb: 1 << 20,
};

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
""" + "".join(  # passing tests after it: its values are far above the output's last lines
    f"\ntest('parses {n} mb', () => {{\n  assert.strictEqual(parse('{n}mb'), {n * 1048576});\n}});\n"
    for n in range(25)
)


@needs_node
async def test_the_line_of_a_table_that_holds_the_value_the_test_got_is_filled_in_first(
    tmp_path: Path,
) -> None:
    root = _js_project(tmp_path / "project")
    (root / "index.js").write_text(UNITS_JS)
    (root / "test" / "index.test.js").write_text(UNITS_TEST_JS)
    model = FillingModel(["  kb: 1 << 10,\n"] * 3)  # then two more samples of that gap

    result = await agent_run(
        root, model, "parse('1kb') gives 1000, not 1024. Fix the library, not the tests."
    )

    assert (root / "index.js").read_text() == UNITS_JS.replace("kb: 1000", "kb: 1 << 10")
    assert "In map (index.js:1)" in result and "pass" in result, result
    assert {before for before, _ in model.gaps} == {"var map = {\n  b: 1,\n"}


@needs_node
async def test_the_line_holding_the_value_the_test_got_is_filled_in_before_any_repair_is_tried(
    tmp_path: Path,
) -> None:
    # That line is as good a lead as a tracer's: the model fills it in first, and the one-token
    # repairs of every other line (a test run each) are never tried.
    root = _js_project(tmp_path / "project")
    runs = tmp_path / "runs.log"  # outside the project: every run of the test command adds a line
    (root / "package.json").write_text(
        json.dumps({"name": "units", "scripts": {"test": f"echo run >> {runs} && node --test"}})
    )
    (root / "index.js").write_text(UNITS_JS)
    (root / "test" / "index.test.js").write_text(UNITS_TEST_JS)
    model = FillingModel(["  kb: 1 << 10,\n"] * 3)

    result = await agent_run(
        root, model, "parse('1kb') gives 1000, not 1024. Fix the library, not the tests."
    )

    assert (root / "index.js").read_text() == UNITS_JS.replace("kb: 1000", "kb: 1 << 10"), result
    assert len(model.gaps) == 3  # the line, then two more samples of it for a smaller change
    # Four runs here (the failing run, the fill-in's, the checks after it), not the fourteen of
    # the sweep of every line's repairs first.
    assert len(runs.read_text().splitlines()) <= 6, runs.read_text()


async def agent_run(root: Path, model: ScriptedModel, prompt: str) -> str:
    """The harness's answer to ``prompt`` in the project at ``root``."""
    return (await _coder(Harness(root), model, root).run(prompt)).text

"""The small-model harness end to end: a scripted model, real tools, a real project on disk."""

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.usage import RequestUsage

from nestor.permissions import PermissionPolicy
from nestor.runtime.factory.toolset import compact_coder_tools
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.harness import SmallModelHarness
from nestor.runtime.kernel.loop import SessionAgent
from nestor.testing import ScriptedModel, reply
from nestor.tools.catalogue import ToolCatalogue
from tests.runtime.support import Harness, scripted
from tests.runtime.tree_support import TreeHarness

SIGNER = '''"""Signing values."""

import hashlib


class Signer:
    """Signs values with a secret key."""

    default_digest_method = staticmethod(hashlib.sha1)

    def __init__(self, secret_key, digest_method=None):
        if digest_method is None:
            digest_method = self.default_digest_method
        self.digest_method = digest_method
'''

CALC = '''def add(a, b):
    """Add two numbers."""
    return a - b
'''

TEST_CALC = """from calc import add


def test_add():
    assert add(2, 3) == 5
"""


def _project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "signer.py").write_text(SIGNER)
    (root / "README.md").write_text("# pkg\n\nSigns things.\n")
    return root


def _prompt_of(messages: list[ModelMessage]) -> str:
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    return "".join(str(part.content) for part in request.parts if isinstance(part, UserPromptPart))


async def test_a_question_is_answered_from_evidence_the_harness_gathered(tmp_path: Path) -> None:
    root = _project(tmp_path / "project")
    seen: list[list[ModelMessage]] = []
    model = scripted(["The default digest is hashlib.sha1 (pkg/signer.py:9)."], requests=seen)
    harness = Harness(root)
    agent = harness.agent(
        model,
        ToolCatalogue().build(["view", "ls", "glob", "grep"]),
        harness=SmallModelHarness(ProjectReader(root)),
    )
    result = await agent.run("What digest method does the Signer use by default?")
    assert result.text == "The default digest is hashlib.sha1 (pkg/signer.py:9)."
    # One model request: the answer step, which saw the question and the definition, not a tool loop.
    assert len(seen) == 1
    prompt = _prompt_of(seen[0])
    assert "default_digest_method = staticmethod(hashlib.sha1)" in prompt
    assert prompt.rstrip().endswith("Question: What digest method does the Signer use by default?")
    # The searches and reads are stored as tool calls of the harness, with their results.
    calls = [
        part.tool_name
        for message in agent.history
        if isinstance(message, ModelResponse) and message.model_name == "harness"
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
    assert "grep" in calls and "view" in calls
    stored = harness.messages.list(agent.session_id)
    assert len(stored) == len(agent.history)


async def test_a_line_a_where_answer_cites_is_named_by_the_function_it_is_in(tmp_path: Path) -> None:
    # Found blind on itsdangerous: "which function compares the age?" got only "timed.py:141".
    root = _project(tmp_path / "project")
    question = "Which function applies the default digest method of the Signer?"
    answer = await _answered(root, "The default is applied at `pkg/signer.py:13`.", question)
    assert answer == (
        "The default is applied at `pkg/signer.py:13`.\n\n"
        "Lines cited: `pkg/signer.py:13` is in `Signer.__init__` (pkg/signer.py:11).\n\n"
        "Defined at: `Signer`: pkg/signer.py:6; `Signer.default_digest_method`: pkg/signer.py:9."
    )


async def test_a_method_a_where_answer_names_is_placed_with_its_class(tmp_path: Path) -> None:
    # Found blind on itsdangerous: "in the `load_payload` method", and no word of the class.
    root = _project(tmp_path / "project")
    answer = await _answered(root, "It is set in `__init__`.", "Where is the digest method chosen?")
    assert answer.endswith("`Signer.__init__`: pkg/signer.py:11.")


async def test_an_answer_about_an_exception_is_followed_by_the_raise_the_code_shown_has(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path / "project")
    (root / "pkg" / "sep.py").write_text(
        "def check_separator(sep):\n"
        "    if sep in 'abc':\n"
        "        raise ValueError('letters cannot be a separator')\n"
        "    return sep\n"
    )
    question = "What exception do I get when check_separator is given a letter as the separator?"
    answer = await _answered(root, "It raises BadSignature.", question)
    assert answer.startswith(
        "It raises BadSignature.\n\nRaised in the code shown: `raise ValueError('letters cannot be a"
        " separator')` when `sep in 'abc'` (pkg/sep.py:3)."
    )


async def test_an_answer_about_a_default_is_followed_by_the_constant_the_code_uses(tmp_path: Path) -> None:
    root = _project(tmp_path / "project")
    (root / "pkg" / "config.py").write_text("DEFAULT_KEY_SIZE = 32\n")
    question = "What key size does the Signer use if I don't pass one?"
    answer = await _answered(root, "The README's example uses 16.", question)
    assert answer == ("The README's example uses 16.\n\nValues: `DEFAULT_KEY_SIZE = 32` (pkg/config.py:1).")


async def test_a_question_about_a_parameter_left_out_sees_and_gets_its_default(tmp_path: Path) -> None:
    root = _project(tmp_path / "project")
    seen: list[list[ModelMessage]] = []
    agent = Harness(root).agent(
        scripted(["It uses MD5."], requests=seen),
        ToolCatalogue().build(["view", "ls", "glob", "grep"]),
        harness=SmallModelHarness(ProjectReader(root)),
    )
    result = await agent.run("Which digest does a `Signer` use if I don't pass digest_method?")
    default = (
        "Defaults: `Signer(digest_method=None)`, then `digest_method = self.default_digest_method` "
        "and `default_digest_method = staticmethod(hashlib.sha1)` (pkg/signer.py:11)."
    )
    assert default in _prompt_of(seen[0])
    assert result.text == f"It uses MD5.\n\n{default}"


async def _answered(root: Path, model_answer: str, question: str) -> str:
    """What a read-only agent on the small-model harness answers when its model says ``model_answer``."""
    agent = Harness(root).agent(
        scripted([model_answer]),
        ToolCatalogue().build(["view", "ls", "glob", "grep"]),
        harness=SmallModelHarness(ProjectReader(root)),
    )
    return (await agent.run(question)).text


def _calc_project(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The user's environment: the python on PATH is the one with pytest.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(TEST_CALC)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    return root


async def test_a_call_the_question_writes_out_is_run_and_its_result_is_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    seen: list[list[ModelMessage]] = []
    model = scripted(["add(2, 3) returns -1: it subtracts (calc.py:3)."], requests=seen)
    agent = _coder(Harness(root), model, root)
    result = await agent.run("What does add(2, 3) return, and what does calc.add(1, 1) give? Where is it?")
    prompt = _prompt_of(seen[0])
    # Run by the project's Python, bug included; a module-qualified call imports the module.
    assert ">>> add(2, 3)\n-1\n>>> calc.add(1, 1)\n0" in prompt
    # Set out after the evidence, on its own, as the result to state: a small model answered
    # cookie's parse from what such code usually does with the run in its evidence.
    run = prompt.index("<run>\nRun in the project's Python:\n>>> add(2, 3)")
    assert prompt.index("</evidence>") < run < prompt.index("Question: What does add(2, 3)")
    assert "state that result exactly" in prompt
    assert "def add(a, b):" in prompt
    # What ran, and where the names are defined, follow the model's words as nestor found them.
    assert result.text == (
        "add(2, 3) returns -1: it subtracts (calc.py:3).\n\n"
        "Run in the project's Python:\n>>> add(2, 3)\n-1\n>>> calc.add(1, 1)\n0\n\n"
        "Defined at: `add`: calc.py:1."
    )


async def test_a_method_written_on_its_class_is_run_on_the_values_the_question_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "version.py").write_text(
        "class Version:\n"
        "    def __init__(self, parts):\n"
        "        self.parts = parts\n\n"
        "    @classmethod\n"
        "    def parse(cls, text):\n"
        "        return cls([int(part) for part in text.split('.')])\n\n"
        "    def next_patch(self):\n"
        "        return '.'.join(map(str, [*self.parts[:2], self.parts[2] + 1]))\n"
    )
    seen: list[list[ModelMessage]] = []
    agent = _coder(Harness(root), scripted(["1.2.4 and 0.9.10."], requests=seen), root)
    await agent.run("Explain Version.next_patch(). What do I get for 1.2.3, and for 0.9.9?")
    assert (
        "<run>\nRun in the project's Python:\n"
        ">>> Version.parse('1.2.3').next_patch()\n'1.2.4'\n"
        ">>> Version.parse('0.9.9').next_patch()\n'0.9.10'\n</run>"
    ) in _prompt_of(seen[0])


def _coder(harness: Harness, model: Model, root: Path) -> SessionAgent:
    return harness.agent(
        model,
        compact_coder_tools(),
        policy=PermissionPolicy(project_root=str(root), yolo=True),
        harness=SmallModelHarness(ProjectReader(root)),
    )


async def test_a_failing_test_is_fixed_by_rewriting_the_function_it_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    wrong = "```python\ndef add(a, b):\n    return a * b\n```"
    right = '```python\ndef add(a, b):\n    """Add two numbers."""\n    return a + b\n```'
    model = ScriptedModel([reply(wrong), reply(right)])
    agent = _coder(Harness(root), model, root)

    result = await agent.run("test_add in tests/test_calc.py fails. Fix the code.")

    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    assert (root / "tests" / "test_calc.py").read_text() == TEST_CALC
    assert "Changed calc.py" in result.text and "pass" in result.text, result.text
    first, second = (_prompt_of(request.messages) for request in model.requests)
    # The function under test, the failing test and its output; then the failed try, undone.
    assert "return a - b" in first and "assert add(2, 3) == 5" in first and "test-output" in first
    assert "did not make the tests pass" in second and "return a - b" in second
    # The retry is sampled differently: a deterministic small model would repeat itself.
    retry_settings = model.requests[1].info.model_settings or {}
    assert retry_settings.get("seed") == 1 and retry_settings.get("temperature", 0) > 0.4


class FillingModel(ScriptedModel):
    """A scripted model that also fills in the middle of code, as the embedded one does."""

    def __init__(self, middles: list[str], replies: Sequence[str] = ()) -> None:
        super().__init__([reply(text) for text in replies])
        self.middles = middles
        self.gaps: list[tuple[str, str]] = []
        self.sampling: list[tuple[float, int | None]] = []

    async def infill(
        self, before: str, after: str, *, max_tokens: int, temperature: float = 0.0, seed: int | None = None
    ) -> ModelResponse | None:
        self.gaps.append((before, after))
        self.sampling.append((temperature, seed))
        return ModelResponse(
            parts=[TextPart(self.middles.pop(0))],
            usage=RequestUsage(input_tokens=30, output_tokens=4),
            model_name="scripted",
        )


CALC_TOTAL = 'def add(a, b):\n    """Add two numbers."""\n    total = a - b\n    return total\n'


async def test_a_failing_test_is_fixed_by_filling_in_one_statement_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(CALC_TOTAL)
    # The first statement filled in wrongly (undone), then the second one rightly; then two more
    # samples of that gap, to find a smaller change that passes too: none does.
    model = FillingModel(
        ["    total = a * b\n", "    return a + b\n", "    return a * b\n", "    return a + b\n"]
    )
    agent = _coder(Harness(root), model, root)

    result = await agent.run("test_add in tests/test_calc.py fails. Fix the code.")

    assert (root / "calc.py").read_text() == CALC_TOTAL.replace("return total", "return a + b")
    assert "`return total` is now `return a + b`" in result.text and "pass" in result.text, result.text
    # Each gap: the code up to the cut statement, and the rest of the function after it.
    second_gap = ('def add(a, b):\n    """Add two numbers."""\n    total = a - b\n', "")
    assert model.gaps == [
        ('def add(a, b):\n    """Add two numbers."""\n', "    return total\n"),
        second_gap,
        second_gap,
        second_gap,
    ]
    assert model.sampling == [(0.0, None), (0.0, None), (pytest.approx(0.6), 1), (pytest.approx(0.8), 2)]
    assert model.requests == []  # no chat request: the fills did it
    assert result.usage.input_tokens == 120 and result.usage.output_tokens == 16


CALC_HELPER = '''def scale(a, b):
    return a * b


def _combine(a, b):
    return a - b


def add(a, b):
    """Add two numbers."""
    return _combine(a, b)
'''


async def test_the_bug_is_looked_for_in_the_helpers_the_failing_test_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found blind on toolz: a failing assertion on merge_sorted, whose bug was in a helper it
    # calls, which no suspect list held.
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(CALC_HELPER)
    # add's only statement filled in as it is (nothing to try), then the helper's rightly.
    model = FillingModel(
        ["    return _combine(a, b)\n", "    return a + b\n", "    return a + b\n", "    return a + b\n"]
    )
    agent = _coder(Harness(root), model, root)

    result = await agent.run("test_add in tests/test_calc.py fails. Fix the code.")

    assert (root / "calc.py").read_text() == CALC_HELPER.replace("a - b", "a + b")
    assert "In _combine (calc.py:5)" in result.text and "pass" in result.text, result.text
    # scale() never ran in the failing test: none of its lines was cut out.
    assert all("return a * b" in before for before, _ in model.gaps)
    assert len(model.gaps) == 4


SERIALIZER = """class Signer:
    def __init__(self, salt):
        self.salt = salt

    def sign(self, value):
        return f"{self.salt}:{value}"

    def unsign(self, token):
        salt, _, value = token.partition(":")
        if salt != self.salt:
            raise ValueError("bad signature")
        return value


class Serializer:
    def __init__(self, salt="default"):
        self.salt = salt

    def make_signer(self, salt=None):
        if salt is None:
            salt = self.salt
        return Signer(self.salt)

    def dumps(self, value, salt=None):
        return self.make_signer(salt).sign(value)

    def loads(self, token, salt=None):
        return self.make_signer(salt).unsign(token)


def is_text(serializer):
    return isinstance(serializer.dumps("x"), str)
"""

TEST_SERIALIZER = """import pytest

from serializer import Serializer


def test_alt_salt():
    serializer = Serializer()
    token = serializer.dumps("value", salt="other")
    with pytest.raises(ValueError):
        serializer.loads(token)
"""


class AnsweringModel(FillingModel):
    """Fills a gap with what ``answer`` says for the code before it (the cut lines unchanged if nothing)."""

    def __init__(self, answer: Callable[[str], str | None]) -> None:
        super().__init__([])
        self.answer = answer

    async def infill(
        self, before: str, after: str, *, max_tokens: int, temperature: float = 0.0, seed: int | None = None
    ) -> ModelResponse | None:
        self.middles.append(self.answer(before) or "")
        return await super().infill(before, after, max_tokens=max_tokens, temperature=temperature, seed=seed)


async def test_a_function_the_called_code_calls_is_suspected_before_one_that_only_mentions_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found blind on itsdangerous: "the salt I pass to dumps() gets ignored" was lost in the
    # make_signer(salt) that dumps calls; the suspects were dumps, loads, and functions that only
    # called dumps, and make_signer was never tried.
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    (root / "serializer.py").write_text(SERIALIZER)
    (root / "tests" / "test_serializer.py").write_text(TEST_SERIALIZER)
    fixed = "        return Signer(salt)\n"
    model = AnsweringModel(lambda before: fixed if before.endswith("salt = self.salt\n") else None)
    agent = _coder(Harness(root), model, root)

    result = await agent.run(
        "test_alt_salt in tests/test_serializer.py fails: looks like the salt I pass to dumps() "
        "gets ignored. Fix it."
    )

    assert (root / "serializer.py").read_text() == SERIALIZER.replace("Signer(self.salt)", "Signer(salt)")
    assert "In make_signer (serializer.py:19)" in result.text, result.text
    # make_signer, which both functions the test calls call, and which has the request's "salt"
    # most, was the first suspect tried.
    assert model.gaps[0][0].rstrip().endswith("def make_signer(self, salt=None):")
    # is_text() only calls dumps(): it ran, but none of its lines was cut out.
    assert not any("def is_text" in before and before.rstrip().endswith("return") for before, _ in model.gaps)


async def test_of_the_versions_that_pass_the_smallest_change_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(CALC_TOTAL)
    # The greedy fill passes the tests with a bigger change than a later sample's.
    model = FillingModel(["    total = b + a + 0\n", "    total = a + b\n", "    total = b * 1 + a\n"])
    agent = _coder(Harness(root), model, root)

    result = await agent.run("test_add in tests/test_calc.py fails. Fix the code.")

    assert (root / "calc.py").read_text() == CALC_TOTAL.replace("a - b", "a + b")
    assert "`total = a - b` is now `total = a + b`" in result.text, result.text


COMPAT = 'def compatible(have, want):\n    """Whether have serves want."""\n    return have > want\n'

TEST_COMPAT = """from compat import compatible


def test_compatible():
    assert compatible(1, 1)
    assert not compatible(1, 2)
"""


async def test_a_one_token_repair_smaller_than_the_models_passing_version_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found on semver: the model's `other.minor == self.minor` passed a suite that never tried a
    # newer minor, where the one-token `>=` for `>` was the fix.
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    (root / "compat.py").write_text(COMPAT)
    (root / "tests" / "test_compat.py").write_text(TEST_COMPAT)
    model = FillingModel(["    return have == want\n"] * 3)
    agent = _coder(Harness(root), model, root)

    result = await agent.run("test_compatible in tests/test_compat.py fails. Fix the code.")

    assert (root / "compat.py").read_text() == COMPAT.replace("have > want", "have >= want")
    assert "`return have > want` is now `return have >= want`" in result.text, result.text


COUNTER = '''class Counter:
    """Counts things."""

    def __init__(self):
        self.count = 0

    def add(self, n=1):
        self.count += n


LIMIT = 10
'''

TEST_COUNTER = """from counter import Counter


def test_add():
    counter = Counter()
    counter.add(2)
    assert counter.count == 2
"""


RESET_TEST = (
    "```python\nfrom counter import Counter\n\n\ndef test_reset():\n    counter = Counter()\n"
    "    counter.add(3)\n    counter.reset()\n    assert counter.count == 0\n```"
)


def _counter_project(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _calc_project(root, monkeypatch)
    (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    (root / "counter.py").write_text(COUNTER)
    (root / "tests" / "test_counter.py").write_text(TEST_COUNTER)
    return root


async def test_a_new_method_is_written_alone_and_put_at_the_end_of_its_class_with_a_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _counter_project(tmp_path / "project", monkeypatch)
    method = "```python\n    def reset(self) -> None:\n        self.count = 0\n```"
    wrong_test = (
        "```python\nfrom counter import Counter\n\ndef test_reset():\n    counter = Counter()\n"
        "    counter.reset()\n    assert counter.count == 1\n```"
    )
    model = ScriptedModel([reply(method), reply(wrong_test), reply(RESET_TEST)])
    agent = _coder(Harness(root), model, root)

    result = await agent.run(
        "Add a `reset` method to Counter that sets the count back to 0. Add a test for it."
    )

    assert (root / "counter.py").read_text() == COUNTER.replace(
        "        self.count += n\n",
        "        self.count += n\n\n    def reset(self) -> None:\n        self.count = 0\n",
    )
    assert (root / "tests" / "test_reset.py").read_text().endswith("assert counter.count == 0\n")
    assert "Added the method `Counter.reset` to counter.py" in result.text, result.text
    assert "Added tests in tests/test_reset.py" in result.text and "pass" in result.text
    # The class was shown to write the method; the example test module to write the tests,
    # and the failing first try's output to write them again.
    method_prompt, test_prompt, retry_prompt = (_prompt_of(request.messages) for request in model.requests)
    assert "class Counter:" in method_prompt and "Write the method `reset` of class Counter" in method_prompt
    assert "from counter import Counter" in test_prompt and "def test_add():" in test_prompt
    assert "Your test module failed" in retry_prompt


async def test_tests_go_into_the_test_module_the_request_names_and_must_use_the_new_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found blind on itsdangerous: asked for a test in test_timed.py, the model wrote a new module
    # that could not see test_timed.py's helpers, then one that copied it and never called the
    # new method, which passed.
    root = _counter_project(tmp_path / "project", monkeypatch)
    method = "```python\n    def reset(self) -> None:\n        self.count = 0\n```"
    copied = (
        "```python\nfrom counter import Counter\n\n\ndef test_add():\n    assert Counter().count == 0\n```"
    )
    model = ScriptedModel([reply(method), reply(copied), reply(RESET_TEST)])
    agent = _coder(Harness(root), model, root)

    result = await agent.run("Add a `reset` method to Counter, with a test in tests/test_counter.py.")

    module = (root / "tests" / "test_counter.py").read_text()
    assert module.startswith(TEST_COUNTER) and module.endswith(
        "    counter.reset()\n    assert counter.count == 0\n"
    )
    assert module.count("from counter import Counter") == 1
    assert not (root / "tests" / "test_reset.py").exists()
    assert "Added tests in tests/test_counter.py" in result.text and "pass" in result.text, result.text
    _, test_prompt, retry_prompt = (_prompt_of(request.messages) for request in model.requests)
    assert "Your tests go at the end of this module" in test_prompt
    assert "Your tests never used `reset`" in retry_prompt


async def test_tests_asked_for_of_existing_code_go_where_its_tests_are_and_the_code_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An everyday request beyond the kinds: tests of code that exists. It went to edit blocks.
    root = _counter_project(tmp_path / "project", monkeypatch)
    wrong = (  # the model's first test expects what the code does not do: the test is rewritten
        "```python\nfrom counter import Counter\n\n\ndef test_add_default():\n    counter = Counter()\n"
        "    counter.add()\n    assert counter.count == 2\n```"
    )
    right = wrong.replace("count == 2", "count == 1")
    model = ScriptedModel([reply(wrong), reply(right)])
    agent = _coder(Harness(root), model, root)

    result = await agent.run("Add a test for Counter.add called without an argument.")

    assert (root / "counter.py").read_text() == COUNTER  # the code under test is never changed
    module = (root / "tests" / "test_counter.py").read_text()
    assert module.startswith(TEST_COUNTER) and module.endswith("    assert counter.count == 1\n"), module
    assert module.count("from counter import Counter") == 1
    assert result.text.startswith("Added tests in tests/test_counter.py."), result.text
    assert "pass" in result.text
    first, retry = (_prompt_of(request.messages) for request in model.requests)
    assert "def add(self, n=1):" in first and "Your tests go at the end of this module" in first
    assert "Your test module failed" in retry and "assert 1 == 2" in retry


@pytest.mark.parametrize("method_indent", ["    ", ""])
async def test_a_module_level_helper_written_for_a_method_goes_above_its_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method_indent: str
) -> None:
    root = _counter_project(tmp_path / "project", monkeypatch)
    # As a model writes it: the helper at the margin, the method indented as in its class, or
    # (found on the eval) at the margin too: a function without `self` is the module's.
    written = (
        "```python\ndef _increment(count, n):\n    return count + n\n\n\n"
        f"{method_indent}def add(self, n=1):\n{method_indent}    self.count = _increment(self.count, n)\n```"
    )
    model = ScriptedModel([reply(written)])

    result = await _coder(Harness(root), model, root).run(
        "Extract the increment in Counter.add into a module-level function _increment(count, n)."
    )

    assert (root / "counter.py").read_text() == (
        "def _increment(count, n):\n    return count + n\n\n\n"
        + COUNTER.replace("        self.count += n\n", "        self.count = _increment(self.count, n)\n")
    )
    assert result.text.startswith("Changed counter.py.\nRewrote `Counter.add`"), result.text


async def test_a_new_test_failing_inside_the_new_method_has_the_method_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _counter_project(tmp_path / "project", monkeypatch)
    wrong = "```python\ndef reset(self) -> None:\n    self.count = self.start\n```"
    right = "```python\ndef reset(self) -> None:\n    self.count = 0\n```"
    model = ScriptedModel([reply(wrong), reply(RESET_TEST), reply(right)])
    agent = _coder(Harness(root), model, root)

    result = await agent.run(
        "Add a `reset` method to Counter that sets the count back to 0. Add a test for it."
    )

    assert "self.start" not in (root / "counter.py").read_text()
    assert (root / "counter.py").read_text().count("def reset") == 1
    assert (root / "tests" / "test_reset.py").is_file()
    assert "Added tests in tests/test_reset.py" in result.text, result.text
    # The method was written again, shown as it was and how the new test failed in it.
    rewrite = _prompt_of(model.requests[2].messages)
    assert (
        "self.count = self.start" in rewrite and "failed this test" in rewrite and "AttributeError" in rewrite
    )


async def test_a_new_method_its_new_test_fails_inside_is_fixed_by_filling_in_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _counter_project(tmp_path / "project", monkeypatch)
    wrong = "```python\ndef reset(self) -> None:\n    self.count = self.start\n```"
    # The statement filled in rightly, then two more samples of it: none smaller.
    model = FillingModel(["        self.count = 0\n"] * 3, replies=[wrong, RESET_TEST])
    agent = _coder(Harness(root), model, root)

    result = await agent.run(
        "Add a `reset` method to Counter that sets the count back to 0. Add a test for it."
    )

    assert "    def reset(self) -> None:\n        self.count = 0\n" in (root / "counter.py").read_text()
    assert (root / "tests" / "test_reset.py").is_file()
    assert "Added tests in tests/test_reset.py" in result.text, result.text
    assert len(model.requests) == 2  # the method and the test; no rewrite was needed


async def test_a_new_test_that_fails_in_its_own_code_once_the_method_is_fixed_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _counter_project(tmp_path / "project", monkeypatch)
    wrong = "```python\ndef reset(self) -> None:\n    self.count = self.start\n```"
    # The second test fails on its own line (a Counter has no len) once reset itself works.
    tests = RESET_TEST.removesuffix("```") + (
        "\n\ndef test_reset_twice():\n    counter = Counter()\n    counter.reset()\n"
        "    assert len(counter) == 0\n```"
    )
    model = FillingModel(["        self.count = 0\n"] * 3, replies=[wrong, tests])
    agent = _coder(Harness(root), model, root)

    result = await agent.run(
        "Add a `reset` method to Counter that sets the count back to 0. Add tests for it."
    )

    assert "    def reset(self) -> None:\n        self.count = 0\n" in (root / "counter.py").read_text()
    written = (root / "tests" / "test_reset.py").read_text()
    assert "def test_reset():" in written and "test_reset_twice" not in written
    assert "I left out `test_reset_twice`" in result.text and "pass" in result.text, result.text
    assert len(model.requests) == 2  # the method and the tests: no rewrite of either


async def test_other_changes_come_as_edit_blocks_matched_to_the_file_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    # As the 1.5B model writes them: the format's placeholder path.
    blocks = (
        "path/to/file.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return a + b\n\n\n"
        "def subtract(a, b):\n    return a - b\n>>>>>>> REPLACE\nAdded subtract."
    )
    agent = _coder(Harness(root), scripted([blocks]), root)

    result = await agent.run("Extend calc.py with subtract(a, b) next to add.")

    assert "def subtract(a, b):\n    return a - b\n" in (root / "calc.py").read_text()
    assert "Changed calc.py" in result.text and "pass" in result.text, result.text


async def test_without_a_shell_a_named_failing_test_is_shown_apart_and_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _calc_project(tmp_path / "project", monkeypatch)
    blocks = (
        "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
        "tests/test_calc.py\n<<<<<<< SEARCH\n    assert add(2, 3) == 5\n=======\n    assert True\n"
        ">>>>>>> REPLACE\n"
    )
    model = ScriptedModel([reply(blocks)])
    agent = Harness(root).agent(
        model,
        ToolCatalogue().build(["view", "ls", "glob", "grep", "edit"]),
        policy=PermissionPolicy(project_root=str(root), yolo=True),
        harness=SmallModelHarness(ProjectReader(root)),
    )

    result = await agent.run("test_add in tests/test_calc.py fails. Fix the code.")

    prompt = _prompt_of(model.requests[0].messages)
    code, _, tests = prompt.partition("<read-only>")
    assert "return a - b" in code and "assert add(2, 3) == 5" not in code
    assert "assert add(2, 3) == 5" in tests and "return a - b" not in tests
    # The test is the spec: the code is changed, the test is not.
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    assert (root / "tests" / "test_calc.py").read_text() == TEST_CALC
    assert "Changed calc.py" in result.text, result.text


async def test_a_new_function_goes_at_the_end_of_its_module_and_into_its_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found blind on toolz: "I'd like an `invert(d)` function in dicttoolz" was no addition, and a
    # module that lists its public names in __all__ needs the new one there.
    root = _calc_project(tmp_path / "project", monkeypatch)
    (root / "calc.py").write_text("__all__ = ('add',)\n\n\n" + CALC.replace("a - b", "a + b"))
    function = '```python\ndef subtract(a, b):\n    """Subtract b from a."""\n    return a - b\n```'
    agent = _coder(Harness(root), scripted([function]), root)

    result = await agent.run("I'd like a `subtract(a, b)` function in calc that subtracts b from a.")

    assert (root / "calc.py").read_text() == (
        "__all__ = ('add', 'subtract')\n\n\n"
        + CALC.replace("a - b", "a + b")
        + '\n\ndef subtract(a, b):\n    """Subtract b from a."""\n    return a - b\n'
    )
    assert "Added the function `subtract` to calc.py" in result.text and "pass" in result.text, result.text


async def test_a_rename_changes_every_whole_word_occurrence(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text("def load_items():\n    return []\n\nload_items_cache = None\n")
    (root / "b.py").write_text("from a import load_items\n\nprint(load_items())\n")
    harness = Harness(root)
    agent = harness.agent(
        scripted([]),
        ToolCatalogue().build(["view", "ls", "glob", "grep", "edit"]),
        policy=PermissionPolicy(project_root=str(root), yolo=True),
        harness=SmallModelHarness(ProjectReader(root)),
    )
    result = await agent.run("Rename `load_items` to `fetch_items` across the project.")
    assert (root / "a.py").read_text() == "def fetch_items():\n    return []\n\nload_items_cache = None\n"
    assert (root / "b.py").read_text() == "from a import fetch_items\n\nprint(fetch_items())\n"
    assert "Renamed `load_items` to `fetch_items`" in result.text


async def test_a_named_agent_gets_the_task_and_its_report_is_the_answer(tmp_path: Path) -> None:
    root = _project(tmp_path / "project")
    explore = ScriptedModel([reply("Signer is defined in pkg/signer.py:6.")])
    harness = TreeHarness(root, models={"small": explore}, compact=True)
    main_model = ScriptedModel([])  # the main agent's model is never asked: the report is the answer
    main = harness.main(
        main_model,
        harness=SmallModelHarness(ProjectReader(root), agent_names=lambda: ["explore", "general"]),
    )
    result = await main.run("Use the explore agent to find where the Signer class is defined.")
    # The agent's words, then where nestor's own index says the name is defined.
    assert result.text == "Signer is defined in pkg/signer.py:6.\n\nDefined at: `Signer`: pkg/signer.py:6."
    [child] = harness.sessions.children(main.session_id)
    assert child.agent_name == "explore"
    # The explore agent ran the same harness: one answer step that saw the class definition.
    assert len(explore.requests) == 1 and "class Signer:" in _prompt_of(explore.requests[0].messages)
    assert main_model.requests == []


async def test_a_rename_of_it_renames_the_name_the_sentence_before_gave(tmp_path: Path) -> None:
    # Found blind on toolz: "Rename it to ..." renamed the word "it" in 26 lines of 12 files.
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text("def getter(index):\n    return index\n\n# pass it on\n")
    (root / "b.py").write_text("from a import getter\n\nprint(getter(1))\n")
    harness = Harness(root)
    agent = harness.agent(
        scripted([]),
        ToolCatalogue().build(["view", "ls", "glob", "grep", "edit"]),
        policy=PermissionPolicy(project_root=str(root), yolo=True),
        harness=SmallModelHarness(ProjectReader(root)),
    )
    result = await agent.run(
        "The internal `getter` helper has a pretty vague name. Rename it to `make_getter` and update "
        "everything that imports or calls it."
    )
    assert (root / "a.py").read_text() == "def make_getter(index):\n    return index\n\n# pass it on\n"
    assert (root / "b.py").read_text() == "from a import make_getter\n\nprint(make_getter(1))\n"
    assert "Renamed `getter` to `make_getter`" in result.text


async def test_a_tour_is_the_models_summary_then_the_layout_and_test_command_nestor_read(
    tmp_path: Path,
) -> None:
    # Found blind on itsdangerous and toolz: given the facts, the model still wrote a layout the
    # project does not have and `python -m unittest discover` for a pytest project.
    root = _project(tmp_path / "project")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "tests").mkdir()
    (root / "tests" / "test_signer.py").write_text("def test_sign():\n    pass\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    seen: list[list[ModelMessage]] = []
    model = scripted(["pkg signs things."], requests=seen)
    agent = Harness(root).agent(
        model,
        ToolCatalogue().build(["view", "ls", "glob", "grep"]),
        harness=SmallModelHarness(ProjectReader(root)),
    )
    result = await agent.run(
        "Give me a tour: what is this project, how is it laid out, how do I run its tests?"
    )
    summary, rest = result.text.split("\n\n", 1)
    assert summary == "pkg signs things."
    assert "- `pkg/`: the `pkg` package's code (`signer.py`); `signer.py`: Signing values" in rest
    assert "Run them with `python -m pytest` (configured in `pytest.ini`, line 1)." in rest
    # The model was shown what the README says, and asked for nothing else.
    prompt = _prompt_of(seen[0])
    assert "Signs things." in prompt and "signer.py" not in prompt

"""The small-model harness end to end: a scripted model, real tools, a real project on disk."""

import os
import sys
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models import Model

from nestor.permissions import PermissionPolicy
from nestor.runtime.loop import SessionAgent
from nestor.runtime.small.harness import SmallModelHarness
from nestor.runtime.small.reader import ProjectReader
from nestor.runtime.toolset import stateless_tools
from nestor.testing import ScriptedModel, reply
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
        stateless_tools(["view", "ls", "glob", "grep"]),
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


def _calc_project(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The user's environment: the python on PATH is the one with pytest.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(TEST_CALC)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    return root


def _coder(harness: Harness, model: Model, root: Path) -> SessionAgent:
    return harness.agent(
        model,
        stateless_tools(["view", "ls", "glob", "grep", "edit", "bash"]),
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

    result = await agent.run("Add a subtract function next to add in calc.py.")

    assert "def subtract(a, b):\n    return a - b\n" in (root / "calc.py").read_text()
    assert "Changed calc.py" in result.text and "pass" in result.text, result.text


async def test_a_rename_changes_every_whole_word_occurrence(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text("def load_items():\n    return []\n\nload_items_cache = None\n")
    (root / "b.py").write_text("from a import load_items\n\nprint(load_items())\n")
    harness = Harness(root)
    agent = harness.agent(
        scripted([]),
        stateless_tools(["view", "ls", "glob", "grep", "edit"]),
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
    assert result.text == "Signer is defined in pkg/signer.py:6."
    [child] = harness.sessions.children(main.session_id)
    assert child.agent_name == "explore"
    # The explore agent ran the same harness: one answer step that saw the class definition.
    assert len(explore.requests) == 1 and "class Signer:" in _prompt_of(explore.requests[0].messages)
    assert main_model.requests == []

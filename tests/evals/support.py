"""The eval tests' small suite: a ``calc`` repository, a question and a fix task on it, and the
scripted model and nestor harness that answer them over loopback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals.harnesses.nestor import NestorHarness
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, ServerUsage

TASKS = r"""
[[task]]
id = "calc-lookup"
repo = "calc"
kind = "lookup"
prompt = "What does add(2, 3) return?"
timeout_s = 60

[task.check]
answer_all = ['\b5\b']
answer_none = ['\b6\b']

[[task]]
id = "calc-fix"
repo = "calc"
kind = "fix"
prompt = "Fix add so that test_calc.py passes."
timeout_s = 60

[[task.setup]]
file = "calc.py"
old = "a + b"
new = "a - b"

[task.check]
test_command = "{python} -m pytest -q -p no:cacheprovider test_calc.py"
unchanged = ["test_calc.py"]
changed = ["calc.py"]
allowed = ["calc.py"]
"""

Responder = Callable[[dict[str, Any]], ServerReply]


def scripted_model(answer: str) -> Responder:
    """A model that answers the question with ``answer`` and fixes ``add`` with one edit."""

    def respond(request: dict[str, Any]) -> ServerReply:
        if not request.get("tools"):  # the new session's title, asked after the run
            return ServerReply(text="Calc")
        messages: list[dict[str, Any]] = request["messages"]
        prompt = next(json.dumps(m["content"]) for m in messages if m["role"] == "user")
        usage = ServerUsage(prompt_tokens=100, completion_tokens=7)
        if "Fix add" not in prompt:
            return ServerReply(text=answer, usage=usage)
        if any(m["role"] == "tool" for m in messages):
            return ServerReply(text="Fixed: add adds again.", usage=usage)
        edit = ServerToolCall("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})
        return ServerReply(tool_calls=(edit,), usage=usage)

    return respond


def served_nestor(server: ScriptedOpenAIServer) -> NestorHarness:
    """The nestor harness on ``server``'s scripted model instead of the embedded one."""
    return NestorHarness(
        env={
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "test-key",
            "NESTOR_MODEL": "openai-chat:gpt-4o",
        }
    )


def make_suite(root: Path, tasks: str = TASKS) -> tuple[Path, Path]:
    """The ``calc`` repository and a tasks file holding ``tasks`` under ``root``: (tasks dir, repos dir)."""
    repo = root / "repos" / "calc"
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    tasks_dir = root / "tasks"
    tasks_dir.mkdir()
    (tasks_dir / "smoke.toml").write_text(tasks)
    return tasks_dir, repo.parent

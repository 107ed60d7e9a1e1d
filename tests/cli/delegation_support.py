"""A real delegated run for the CLI's outputs: a main agent, two sub-agents, a store and a bus.

The main agent sends two tasks at once: ``find auth code`` to explore (on the small model, where it
calls grep and view) and ``check the tests`` to general (on the main model, where it calls ls).
Every request costs $0.001, so totals can be checked exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nestor.bus import EventHandler
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.setup import RunResult
from nestor.testing import ScriptedModel, call, reply
from tests.runtime.tree_support import RoutedScript, TreeHarness, usage

EXPLORE = "find auth code"
GENERAL = "check the tests"


def task(description: str, prompt: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "prompt": prompt, **extra}


@dataclass
class DelegatedRun:
    """The harness after the run, the main agent and its result."""

    harness: TreeHarness
    main: SessionAgent
    result: RunResult


async def delegated_run(root: Path, handlers: Sequence[EventHandler] = ()) -> DelegatedRun:
    """Run the two-task scenario on a project in ``root`` with ``handlers`` subscribed to the bus."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "src" / "auth.py").write_text("def login(user):\n    return check(user)\n")
    small = ScriptedModel(
        [
            call("grep", {"pattern": "def login"}, usage=usage()),
            call("view", {"path": "src/auth.py"}, usage=usage()),
            reply("login() is in src/auth.py:1", usage=usage()),
        ]
    )
    main_model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", task(EXPLORE, "where is login?", subagent_type="explore"), usage=usage())
                    + call("task", task(GENERAL, "are there tests?"), usage=usage()),
                    reply("Login is in src/auth.py; there are no tests.", usage=usage()),
                ],
                "are there tests?": [
                    call("ls", {"path": "."}, usage=usage()),
                    reply("no tests directory", usage=usage()),
                ],
            }
        )
    )
    harness = TreeHarness(root, models={"small": small})
    for handler in handlers:
        harness.bus.subscribe(handler)
    main = harness.main(main_model, ("view", "ls", "glob", "grep"))
    result = await main.run("USER: where is login, and are there tests?")
    assert result.stop_reason == "completed", result.text
    return DelegatedRun(harness, main, result)

"""An agent file's own hooks: read from its front matter, for that agent alone, a project's once approved."""

from __future__ import annotations

from pathlib import Path

from nestor.agents.readers import ReadContext, ReadResult, read_agent_text
from nestor.api import App, ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.runtime.features.hook_events.support import Project

CHECKER = """---
name: checker
description: Checks things.
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: "cat >> {log}"
---
Check.
"""


def read(ecosystem: str, text: str, source: str = "project") -> ReadResult:
    return read_agent_text(ReadContext(Path("/p/a.md"), source, ecosystem, "a"), text)  # type: ignore[arg-type]


def test_a_claude_agent_files_hooks_are_read_as_its_own() -> None:
    result = read("claude", CHECKER.format(log="/tmp/x"))
    assert result.problems == () and result.spec is not None
    (hook,) = result.spec.hooks
    assert (hook.event, hook.matcher, hook.command, hook.agent, hook.project) == (
        "PreToolUse",
        "Bash",
        "cat >> /tmp/x",
        "checker",
        True,
    )
    assert hook.name == "agent checker PreToolUse[Bash] in /p/a.md"


def test_a_bad_hook_is_a_warning_in_claudes_format_and_an_error_in_nestors() -> None:
    text = "---\nname: a\ndescription: d\nhooks:\n  PreToolCall: []\n---\nBody.\n"
    claude = read("claude", text)
    assert claude.spec is not None and claude.spec.hooks == ()
    assert "unknown hook event" in claude.problems[0].message and claude.problems[0].severity == "warning"
    nestor = read("nestor", text)
    assert nestor.spec is None and nestor.problems[0].severity == "error"


async def test_a_project_agent_files_hook_runs_for_that_agent_only_and_only_once_approved(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path)
    log = tmp_path / "seen.jsonl"
    agents = project.folder / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "checker.md").write_text(CHECKER.format(log=log), encoding="utf-8")
    task = {"description": "check", "prompt": "run ls", "subagent_type": "checker"}
    replies = [
        ServerReply(tool_calls=(ServerToolCall("bash", {"command": "echo main"}),)),
        ServerReply(tool_calls=(ServerToolCall("task", task),)),
        ServerReply(tool_calls=(ServerToolCall("bash", {"command": "echo child"}),)),
        ServerReply(text="checked"),
        ServerReply(text="done"),
    ]
    notices: list[str] = []
    outcome, _requests = await project.run(replies, yolo=True, notices=notices)
    assert outcome.text == "done" and not log.exists()  # trusted, not approved: skipped and named
    assert any(
        "agent checker PreToolUse[Bash]" in line and "nestor hooks approve" in line for line in notices
    )

    with ScriptedOpenAIServer([]) as server:
        app = App.open(project.settings(server.base_url))
        try:
            approvals = app.hook_approvals()
            (listed,) = [item for item in app.listed_hooks() if item.hook.agent == "checker"]
            assert listed.state == "new"
            approvals.approve(listed.hook)
        finally:
            app.close()
    outcome, _requests = await project.run(replies, yolo=True)
    assert outcome.text == "done"
    (seen,) = log.read_text().splitlines()  # the child's call, not the main agent's
    assert '"command": "echo child"' in seen and '"agent_type": "checker"' in seen

    untrusted = Project(tmp_path / "untrusted", trusted=False)
    agents = untrusted.folder / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "checker.md").write_text(CHECKER.format(log=tmp_path / "never.jsonl"), encoding="utf-8")
    outcome, _requests = await untrusted.run(replies, yolo=True)
    assert not (tmp_path / "never.jsonl").exists()

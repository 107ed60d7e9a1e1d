"""``nestor sessions list|show|export|delete`` on a store filled through the store's own API."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from nestor.core.usage import Usage
from nestor.runtime.compaction import CompactionMark, summary_message
from nestor.store import MessageStore, SessionStore, open_database
from tests.cli.support import clean_env, nestor, nestor_json


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    project = tmp_path / "project"
    project.mkdir()
    env = clean_env(tmp_path / "home")
    database = open_database(Path(env["NESTOR_HOME"]) / "nestor.db")
    sessions, messages = SessionStore(database), MessageStore(database)
    session = sessions.create(project, title="Fix the login bug", model="openai-chat:gpt-4o")
    messages.append(session.id, ModelRequest(parts=[UserPromptPart("why does login fail?")]))
    usage = Usage(input_tokens=100, output_tokens=20, requests=1, cost_usd=0.001)
    messages.append(
        session.id,
        ModelResponse(
            parts=[TextPart("Looking."), ToolCallPart("grep", {"pattern": "login"}, tool_call_id="c1")]
        ),
        usage=usage,
        add_to_totals=True,
    )
    messages.append(
        session.id, ModelRequest(parts=[ToolReturnPart("grep", "auth.py:3: def login", tool_call_id="c1")])
    )
    other = sessions.create(tmp_path, title="elsewhere")
    assert other.id != session.id
    database.close()
    return project, env, session.id


def test_list_shows_this_project_only_unless_all(filled: tuple[Path, dict[str, str], str]) -> None:
    project, env, session_id = filled
    rows = nestor_json(["sessions", "list", "--json"], cwd=project, env=env)
    assert [row["id"] for row in rows] == [session_id]
    assert rows[0]["usage"]["input_tokens"] == 100 and rows[0]["cost_usd"] == pytest.approx(0.001)
    assert len(nestor_json(["sessions", "list", "--all", "--json"], cwd=project, env=env)) == 2
    table = nestor(["sessions", "list"], cwd=project, env=env)
    assert "Fix the login bug" in table.stdout and "$0.0010" in table.stdout


def test_show_renders_a_transcript(filled: tuple[Path, dict[str, str], str]) -> None:
    project, env, session_id = filled
    done = nestor(["sessions", "show", session_id[:-4]], cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    for fragment in ("# Fix the login bug", "why does login fail?", "call `grep`", "auth.py:3: def login"):
        assert fragment in done.stdout


def test_export_json_and_markdown_to_a_file(filled: tuple[Path, dict[str, str], str], tmp_path: Path) -> None:
    project, env, session_id = filled
    exported = nestor_json(["sessions", "export", session_id], cwd=project, env=env)
    assert exported["session"]["title"] == "Fix the login bug"
    assert [m["seq"] for m in exported["messages"]] == [0, 1, 2]
    assert exported["messages"][1]["message"]["parts"][1]["tool_name"] == "grep"
    target = tmp_path / "out.md"
    done = nestor(["sessions", "export", session_id, "--markdown", "-o", str(target)], cwd=project, env=env)
    assert done.returncode == 0 and "exported" in done.stderr
    assert target.read_text().startswith("# Fix the login bug")


def test_delete_needs_confirmation_without_a_terminal(filled: tuple[Path, dict[str, str], str]) -> None:
    project, env, session_id = filled
    refused = nestor(["sessions", "delete", session_id], cwd=project, env=env)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    done = nestor(["sessions", "delete", session_id, "--yes"], cwd=project, env=env)
    assert done.returncode == 0 and session_id in done.stdout
    assert nestor_json(["sessions", "list", "--json"], cwd=project, env=env) == []


def test_show_and_export_mark_where_the_history_was_compacted(
    filled: tuple[Path, dict[str, str], str],
) -> None:
    project, env, session_id = filled
    database = open_database(Path(env["NESTOR_HOME"]) / "nestor.db")
    mark = CompactionMark(kept_messages=2, summarized_messages=1, trigger="threshold", tokens_before=170_000)
    MessageStore(database).append(
        session_id,
        summary_message("## Goal\nfix the login bug", mark),
        usage=Usage(input_tokens=9000, output_tokens=400, requests=1),
        add_to_totals=True,
    )
    database.close()

    shown = nestor(["sessions", "show", session_id], cwd=project, env=env)
    assert (
        "## context compacted (threshold: 1 message summarised at 170.0k tokens, the last 2 kept"
        in shown.stdout
    )
    assert "fix the login bug" in shown.stdout
    exported = nestor_json(["sessions", "show", session_id, "--json"], cwd=project, env=env)
    marks = [m["compaction"] for m in exported["messages"]]
    assert marks[:3] == [None, None, None]
    assert marks[3] == {
        "kept_messages": 2,
        "summarized_messages": 1,
        "trigger": "threshold",
        "tokens_before": 170_000,
    }

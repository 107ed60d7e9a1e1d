"""``nestor sessions list|show|export|import|delete`` on a store filled through the store's own API."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import (
    BinaryContent,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from nestor.core.usage import Usage
from nestor.runtime.features.compaction import summary_message
from nestor.runtime.kernel.compaction_mark import CompactionMark
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
    assert "- tokens: 100 in, 20 out, 1 request, $0.0010\n" in done.stdout


def test_show_names_the_image_of_a_prompt_instead_of_printing_its_bytes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = clean_env(tmp_path / "home")
    database = open_database(Path(env["NESTOR_HOME"]) / "nestor.db")
    session = SessionStore(database).create(project, title="A screenshot")
    image = BinaryContent(data=b"\x89PNG" + b"\x00" * 2000, media_type="image/png")
    MessageStore(database).append(session.id, ModelRequest(parts=[UserPromptPart(["what is this?", image])]))
    database.close()

    done = nestor(["sessions", "show", session.id], cwd=project, env=env)

    assert done.returncode == 0, done.stderr
    assert "## user\n\nwhat is this?\n[image/png]\n" in done.stdout
    assert "x00" not in done.stdout


def test_show_says_once_that_the_cost_is_unknown(filled: tuple[Path, dict[str, str], str]) -> None:
    project, env, session_id = filled
    listed = nestor_json(["sessions", "list", "--all", "--json"], cwd=project, env=env)
    [other] = [row for row in listed if row["id"] != session_id]
    done = nestor(["sessions", "show", other["id"]], cwd=project, env=env)
    assert "- tokens: 0 in, 0 out, 0 requests, cost unknown\n" in done.stdout


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


@pytest.fixture
def tree(filled: tuple[Path, dict[str, str], str]) -> tuple[Path, dict[str, str], dict[str, str]]:
    """The filled session with sub-agents: explore (with a nested explore) and general, via the store."""
    project, env, root_id = filled
    database = open_database(Path(env["NESTOR_HOME"]) / "nestor.db")
    sessions, messages = SessionStore(database), MessageStore(database)
    ids = {"root": root_id}
    for key, agent, title, parent in (
        ("explore", "explore", "find auth code", root_id),
        ("general", "general", "fix the tests", root_id),
    ):
        ids[key] = sessions.create(project, agent_name=agent, title=title, parent_id=parent).id
    ids["nested"] = sessions.create(project, agent_name="explore", title="dig", parent_id=ids["general"]).id
    spent = Usage(input_tokens=1000, output_tokens=200, requests=2, cost_usd=0.004)
    messages.append(
        ids["explore"], ModelResponse(parts=[TextPart("auth is in auth.py")]), usage=spent, add_to_totals=True
    )
    explore_result = {
        "success": True,
        "agent_type": "explore",
        "agent_id": ids["explore"],
        "description": "find auth code",
        "tools_used": {"grep": 5, "view": 3},
        "execution_time": 5.1,
        "stop_reason": "completed",
    }
    messages.append(
        root_id,
        ModelRequest(
            parts=[
                ToolReturnPart(
                    "task", "auth is in auth.py", tool_call_id="t1", metadata={"subagent": explore_result}
                )
            ]
        ),
    )
    database.close()
    return project, env, ids


def test_show_tree_draws_the_session_and_its_sub_agents(
    tree: tuple[Path, dict[str, str], dict[str, str]],
) -> None:
    project, env, ids = tree
    done = nestor(["sessions", "show", ids["root"], "--tree"], cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(f'{ids["root"]}  coder  "Fix the login bug"  idle · 1 tool (grep 1) · ')
    assert lines[0].endswith("1.3k tok, $0.0050 incl. sub-agents (own: 120 tok, $0.0010)")
    assert lines[1] == (
        f'├─ {ids["explore"]}  explore  "find auth code"  completed · 8 tools (grep 5, view 3) · 5.1s · '
        "1.2k tok, $0.0040"
    )
    assert lines[2].startswith(f'└─ {ids["general"]}  general  "fix the tests"  idle · 0 tools · ')
    assert lines[3].startswith(f'   └─ {ids["nested"]}  explore  "dig"  idle · 0 tools · ')

    nested = nestor_json(["sessions", "show", ids["root"], "--tree", "--json"], cwd=project, env=env)
    assert nested["id"] == ids["root"] and nested["own_usage"]["total_tokens"] == 120
    assert nested["usage"]["total_tokens"] == 1320 and nested["cost_usd"] == pytest.approx(0.005)
    explore, general = nested["children"]
    assert (explore["id"], explore["outcome"], explore["tools_used"], explore["tool_calls"]) == (
        ids["explore"],
        "completed",
        {"grep": 5, "view": 3},
        8,
    )
    assert explore["duration_s"] == 5.1 and explore["parent_id"] == ids["root"] and explore["children"] == []
    assert [child["id"] for child in general["children"]] == [ids["nested"]]


def test_show_without_tree_counts_the_sub_agents_and_lists_hide_them(
    tree: tuple[Path, dict[str, str], dict[str, str]],
) -> None:
    project, env, ids = tree
    shown = nestor(["sessions", "show", ids["root"]], cwd=project, env=env)
    assert shown.stdout.rstrip().splitlines()[-1] == "3 sub-agent sessions; --tree shows them"
    child = nestor(["sessions", "show", ids["general"]], cwd=project, env=env)
    assert child.stdout.rstrip().splitlines()[-1] == (
        f"sub-agent session of {ids['root']}; 1 sub-agent session; --tree shows them"
    )
    listed = nestor_json(["sessions", "list", "--all", "--json"], cwd=project, env=env)
    assert ids["root"] in {row["id"] for row in listed}
    assert not {ids["explore"], ids["general"], ids["nested"]} & {row["id"] for row in listed}


def test_a_tree_exported_from_one_store_imports_into_another_whole(
    tree: tuple[Path, dict[str, str], dict[str, str]], tmp_path: Path
) -> None:
    project, env, ids = tree
    exported = tmp_path / "tree.json"
    done = nestor(["sessions", "export", ids["root"], "--tree", "-o", str(exported)], cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    before = nestor(["sessions", "show", ids["root"], "--tree"], cwd=project, env=env).stdout
    elsewhere = clean_env(tmp_path / "other-home")

    imported = nestor(["sessions", "import", str(exported)], cwd=project, env=elsewhere)
    again = nestor(["sessions", "import", str(exported)], cwd=project, env=elsewhere)

    assert imported.returncode == 0 and imported.stdout.strip() == f"imported {ids['root']}", imported.stderr
    assert nestor(["sessions", "show", ids["root"], "--tree"], cwd=project, env=elsewhere).stdout == before
    transcript = nestor(["sessions", "show", ids["root"]], cwd=project, env=elsewhere).stdout
    assert "why does login fail?" in transcript
    assert again.returncode == 1 and f"session {ids['root']} is already in the store" in again.stderr


def test_importing_a_file_that_is_no_export_names_what_is_wrong(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home")
    bad = tmp_path / "bad.json"
    for text, problem in (
        ("[1, 2]", "it is not a JSON object"),
        ('{"session": {"id": "ses_1"}, "messages": []}', "'usage' is missing"),
        ("{", "Expecting property name"),
    ):
        bad.write_text(text)
        done = nestor(["sessions", "import", str(bad)], cwd=tmp_path, env=env)
        assert (
            done.returncode == 1
            and "is not a nestor session export" in done.stderr
            and problem in done.stderr
        )
        assert "Traceback" not in done.stderr

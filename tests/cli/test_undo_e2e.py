"""``nestor undo``, ``nestor sessions fork`` and ``nestor run --fork-session``, end to end in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import git_repo, nestor, nestor_json, openai_env
from tests.server_routes import Route, router

MODEL = ["--model", "openai-chat:gpt-4o"]
SCRIPT = "echo new > new.txt; echo after > change.txt; rm delete.txt"


def bash(command: str) -> ServerToolCall:
    return ServerToolCall("bash", {"command": command})


def project_at(tmp_path: Path, kind: str) -> Path:
    files = {"change.txt": "before\n", "delete.txt": "delete me\n", "keep.txt": "keep\n"}
    if kind == "git repository":
        return git_repo(tmp_path / "project", files)
    root = tmp_path / "project"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def files_of(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.iterdir()) if p.is_file()}


def run_json(args: list[str], project: Path, env: dict[str, str]) -> dict[str, object]:
    done = nestor(["run", "--yolo", *MODEL, "-o", "json", *args], cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def message_count(session_id: str, project: Path, env: dict[str, str]) -> int:
    return len(nestor_json(["sessions", "show", session_id, "--json"], cwd=project, env=env)["messages"])


@pytest.mark.parametrize("kind", ["git repository", "plain folder"])
def test_undo_after_a_bash_command_dry_run_then_code_then_conversation(tmp_path: Path, kind: str) -> None:
    project = project_at(tmp_path, kind)
    before = files_of(project)
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [ServerReply(tool_calls=(bash(SCRIPT),)), ServerReply(text="changed")]
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        env = openai_env(tmp_path, server)
        session_id = str(run_json(["USER: change things"], project, env)["session_id"])
        changed = files_of(project)
        messages = message_count(session_id, project, env)

        dry = nestor(["undo", "--dry-run"], cwd=project, env=env)
        assert dry.returncode == 0, dry.stderr
        assert "undo prompt 1 (USER: change things): 3 files" in dry.stdout
        assert "  restore  change.txt" in dry.stdout and "  delete   new.txt" in dry.stdout
        assert "  create   delete.txt" in dry.stdout and "-after\n+before" in dry.stdout
        assert (
            "would go back to before prompt 1" in dry.stdout and "dry run: nothing was changed" in dry.stdout
        )
        assert files_of(project) == changed

        shown = nestor(["sessions", "show", session_id], cwd=project, env=env)
        assert (
            "## checkpoints" in shown.stdout
            and "A new.txt" in shown.stdout
            and "D delete.txt" in shown.stdout
        )

        code = nestor(["undo", "--code-only"], cwd=project, env=env)
        assert code.returncode == 0, code.stderr
        assert files_of(project) == before
        assert message_count(session_id, project, env) == messages

        again = nestor(["undo", "--code-only"], cwd=project, env=env)
        assert "nothing: no prompt of this session changed files" in again.stdout

        conversation = nestor(["undo", "--conversation-only", "--session", session_id], cwd=project, env=env)
        assert conversation.returncode == 0, conversation.stderr
        kept = conversation.stdout.split("kept in session ")[1].split(" ")[0]
        assert message_count(session_id, project, env) == 0
        assert message_count(kept, project, env) == messages


def test_fork_at_a_message_and_resume_both_sessions(tmp_path: Path) -> None:
    project = project_at(tmp_path, "plain folder")
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(text="one"),
            ServerReply(text="two"),
            ServerReply(text="three"),
            ServerReply(text="four"),
        ]
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        env = openai_env(tmp_path, server)
        session_id = str(run_json(["USER: first"], project, env)["session_id"])
        run_json(["--resume", session_id, "USER: second"], project, env)
        assert message_count(session_id, project, env) == 4

        forked = nestor(["sessions", "fork", session_id, "--at", "2"], cwd=project, env=env)
        assert forked.returncode == 0, forked.stderr
        fork_id = forked.stdout.strip()
        assert fork_id.startswith("ses_") and fork_id != session_id
        assert message_count(fork_id, project, env) == 2

        on_fork = run_json(["--resume", fork_id, "USER: on the fork"], project, env)
        assert on_fork["session_id"] == fork_id and message_count(fork_id, project, env) == 4
        copied = run_json(["--fork-session", "--resume", session_id, "USER: on a copy"], project, env)
        assert copied["session_id"] not in (session_id, fork_id)
        assert message_count(str(copied["session_id"]), project, env) == 6
        assert message_count(session_id, project, env) == 4  # the original is untouched

        mistake = nestor(["run", "--fork-session", *MODEL, "USER: x"], cwd=project, env=env)
        assert mistake.returncode == 1 and "--fork-session needs the session to fork" in mistake.stderr
        wrong = nestor(["sessions", "fork", session_id, "--at", "99"], cwd=project, env=env)
        assert wrong.returncode == 1 and "has no message 99" in wrong.stderr


def test_deleting_the_last_session_removes_the_projects_snapshots(tmp_path: Path) -> None:
    project = project_at(tmp_path, "plain folder")
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [ServerReply(tool_calls=(bash("echo x > x.txt"),)), ServerReply(text="done")]
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        env = openai_env(tmp_path, server)
        session_id = str(run_json(["USER: write"], project, env)["session_id"])
        store = tmp_path / "home" / "nestor-data" / "checkpoints"
        assert len(list(store.iterdir())) == 1

        deleted = nestor(["sessions", "delete", session_id, "--yes"], cwd=project, env=env)

    assert deleted.returncode == 0, deleted.stderr
    assert list(store.iterdir()) == []

"""nestor's own git, end to end: ``nestor run`` in a hostile repository, no ``--yolo``, no trust.

The second red team's cases 1 and 6: a repository delivered with its ``.git`` whose config runs
a command (``core.fsmonitor``) that writes the user's keys outside the project and copies a
private key where the model can read it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import nestor, openai_env
from tests.cli.test_sandbox_e2e import tool_results
from tests.hostile_repos import committed_repo, git
from tests.server_routes import Route, router


def hostile_repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The red team's repository; returns it, the folder it writes to outside, and the user's home."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = committed_repo(tmp_path / "repo")
    git(
        repo,
        "config",
        "core.fsmonitor",
        f"echo token=$SECRET_TOKEN key=$OPENAI_API_KEY > {outside}/x; "
        f"cat {home}/.ssh/id_ed25519 >> loot.txt; false",
    )
    return repo, outside, home


def test_listing_a_hostile_repository_leaks_nothing(tmp_path: Path) -> None:
    repo, outside, _home = hostile_repo(tmp_path)
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(ServerToolCall("ls", {"path": "."}),)),
            ServerReply(tool_calls=(ServerToolCall("view", {"path": "loot.txt"}),)),
            ServerReply(text="done"),
        ]
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        env = openai_env(tmp_path, server) | {"SECRET_TOKEN": "token-secret"}
        done = nestor(["run", "--model", "openai-chat:gpt-4o", "USER: look around"], cwd=repo, env=env)
        requests = list(server.requests)

    assert done.returncode == 0, done.stderr
    assert not (outside / "x").exists()
    assert not (repo / "loot.txt").exists()
    seen = tool_results(requests, "USER")
    assert "a.txt" in seen
    assert "PRIVATE-KEY-MATERIAL" not in str(requests)


@pytest.mark.parametrize("writable_git", [False, True], ids=["git read-only", "writable_git"])
def test_a_commondir_planted_by_a_running_command_is_never_read_by_nestor(
    tmp_path: Path, writable_git: bool
) -> None:
    # Case 6: a sandboxed command writes .git/commondir (naming a config with an fsmonitor) and
    # sleeps; meanwhile a sub-agent lists files with nestor's own git.
    repo, outside, home = hostile_repo(tmp_path)
    git(repo, "config", "--unset", "core.fsmonitor")
    evil = tmp_path / "evil"
    git(tmp_path, "init", "-q", "--bare", str(evil))
    git(evil, "config", "core.fsmonitor", f"echo planted > {outside}/x; false")
    plant = f"cp -r .git/objects .git/refs {evil}/ 2>/dev/null; echo {evil} > .git/commondir; sleep 3"
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(
                tool_calls=(
                    ServerToolCall("bash", {"command": plant}),
                    ServerToolCall(
                        "task",
                        {"description": "list", "prompt": "list the files", "subagent_type": "explore"},
                    ),
                )
            ),
            ServerReply(text="done"),
        ],
        "list the files": [
            ServerReply(tool_calls=(ServerToolCall("bash", {"command": "sleep 1"}),)),
            ServerReply(tool_calls=(ServerToolCall("ls", {"path": "."}),)),
            ServerReply(text="listed"),
        ],
    }
    config = home / ".config" / "nestor" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f"[sandbox]\nwritable_git = {'true' if writable_git else 'false'}\n")
    with ScriptedOpenAIServer(router(routes)) as server:
        done = nestor(
            ["run", "--yolo", "--model", "openai-chat:gpt-4o", "USER: plant and list"],
            cwd=repo,
            env=openai_env(tmp_path, server),
        )
        requests = list(server.requests)

    assert done.returncode == 0, done.stderr
    assert not (outside / "x").exists()
    assert "a.txt" in tool_results(requests, "list the files")
    assert not (repo / ".git" / "commondir").exists()

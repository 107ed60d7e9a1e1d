"""The red team's bash and hard-link findings, end to end: ``nestor run`` with a user's own rules."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import git_repo, nestor, openai_env


def user_rules(tmp_path: Path, rules: str) -> None:
    """Write ``rules`` as the ``[permissions]`` of the user's own config (not the project's)."""
    config = tmp_path / "home" / ".config" / "nestor"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f"[permissions]\n{rules}\n")


def run(tmp_path: Path, repo: Path, turns: list[list[ServerToolCall]], *flags: str) -> list[str]:
    """Run each list of calls as one model turn; return what every tool call answered, in order."""
    script = [*(ServerReply(tool_calls=tuple(calls)) for calls in turns), ServerReply(text="done")]
    with ScriptedOpenAIServer(script) as server:
        done = nestor(
            ["run", *flags, "--model", "openai-chat:gpt-4o", "go"], cwd=repo, env=openai_env(tmp_path, server)
        )
        requests: list[dict[str, Any]] = server.requests
    assert done.returncode == 0, done.stderr
    # The main agent's last request holds every answer (a title request may come after it).
    answers = [
        [str(m["content"]) for m in request["messages"] if m["role"] == "tool"] for request in requests
    ]
    return max(answers, key=len)


def test_a_read_only_allow_rule_runs_no_hidden_code_and_writes_no_file(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    user_rules(tmp_path, 'allow = ["bash(ls *)", "bash(git status*)"]')
    results = run(
        tmp_path,
        repo,
        [
            [
                ServerToolCall("bash", {"command": "x='$(touch P)'; ls ${x@P}"}),
                ServerToolCall("bash", {"command": "x='a[$(touch Q)]'; ls $((x))"}),
                ServerToolCall("bash", {"command": "ls > f"}),
                ServerToolCall("bash", {"command": "git status >> README.md"}),
                ServerToolCall("bash", {"command": "ls -a"}),
            ]
        ],
    )
    assert not (repo / "P").exists() and not (repo / "Q").exists() and not (repo / "f").exists()
    assert (repo / "README.md").read_text() == "# r\n"
    assert all("Permission denied" in result for result in results[:4]), results
    assert "README.md" in results[4]  # what the rule allows still runs


def test_a_deny_rule_holds_under_yolo_behind_wrappers_and_evaluations(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    names = ["a", "b", "c", "d", "e"]
    for name in names:
        (repo / name).write_text("keep")
    user_rules(tmp_path, 'deny = ["bash(rm *)"]')
    results = run(
        tmp_path,
        repo,
        [
            [
                ServerToolCall("bash", {"command": "echo a | xargs rm"}),
                ServerToolCall("bash", {"command": "stdbuf --output 0 rm b"}),
                ServerToolCall("bash", {"command": "x='$(rm c)'; true ${x@P}"}),
                ServerToolCall("bash", {"command": "git -c alias.x='!rm d' x"}),
                ServerToolCall("bash", {"command": "echo 'rm e' > s.sh; sh s.sh"}),
            ]
        ],
        "--yolo",
    )
    assert all((repo / name).exists() for name in names), results
    assert all("Permission denied" in result for result in results), results


def test_a_hard_link_does_not_open_a_file_a_read_rule_denies(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"secrets/key.txt": "hunter2\n", "notes.txt": "hello\n"})
    user_rules(tmp_path, 'deny = ["Read(secrets/**)"]')
    results = run(
        tmp_path,
        repo,
        [
            [ServerToolCall("bash", {"command": "ln secrets/key.txt k"})],
            [
                ServerToolCall("view", {"path": "k"}),
                ServerToolCall("grep", {"pattern": "hunt"}),
                ServerToolCall("view", {"path": "notes.txt"}),
            ],
        ],
        "--yolo",
    )
    assert os.stat(repo / "k").st_ino == os.stat(repo / "secrets" / "key.txt").st_ino  # bash made the link
    assert "Permission denied by rule view(secrets/**)" in results[1], results
    assert "hunter2" not in results[1] + results[2]
    assert "hello" in results[3]


def test_the_write_tool_does_not_plant_a_hook_or_a_git_setting_under_yolo(tmp_path: Path) -> None:
    # The sandbox keeps commands out of .git; the file tools run outside it, so their writes there
    # are asked (headless: refused) whatever allows them: a hook runs at the user's next commit.
    repo = git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    user_rules(tmp_path, 'allow = ["edit", "write"]')
    hook = repo / ".git" / "hooks" / "pre-commit"
    config = (repo / ".git" / "config").read_text()
    results = run(
        tmp_path,
        repo,
        [
            [
                ServerToolCall(
                    "write", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}
                ),
                ServerToolCall(
                    "write", {"path": ".git/config", "content": "[core]\n\tfsmonitor = touch pwned\n"}
                ),
                ServerToolCall("write", {"path": "notes.txt", "content": "fine\n"}),
            ]
        ],
        "--yolo",
    )

    assert not hook.exists()
    assert (repo / ".git" / "config").read_text() == config
    assert (repo / "notes.txt").read_text() == "fine\n"
    assert sum("inside a repository's .git" in result for result in results) == 2

from __future__ import annotations

import subprocess
from pathlib import Path

from nestor.core.permission import PermissionRequest
from nestor.permissions import PermissionPolicy


def request(
    tool: str, action: str, target: str, *, outside: bool = False, grant: str = "*"
) -> PermissionRequest:
    return PermissionRequest(
        tool_name=tool,
        action=action,  # type: ignore[arg-type]
        target=target,
        description=f"{tool} {target}",
        outside_project=outside,
        grant_key=grant,
    )


def test_defaults_allow_reads_inside_and_ask_for_the_rest() -> None:
    policy = PermissionPolicy(project_root="/repo")
    assert policy.decide(request("view", "read", "/repo/a.py")).kind == "allow"
    assert policy.decide(request("view", "read", "/etc/passwd", outside=True)).kind == "ask"
    for tool, action in (("write", "write"), ("bash", "execute"), ("fetch", "network")):
        decision = policy.decide(request(tool, action, "x"))
        assert decision.kind == "ask", tool


def test_deny_beats_ask_beats_allow() -> None:
    policy = PermissionPolicy.from_config(
        allow=["bash"], ask=["bash(git push*)"], deny=["bash(git push --force*)"], project_root="/repo"
    )
    assert policy.decide(request("bash", "execute", "git status")).kind == "allow"
    assert policy.decide(request("bash", "execute", "git push origin")).kind == "ask"
    denied = policy.decide(request("bash", "execute", "git push --force origin"))
    assert denied.kind == "deny" and "git push --force*" in denied.reason


def test_yolo_allows_everything_but_deny_rules() -> None:
    policy = PermissionPolicy.from_config([], [], ["bash(rm *)"], project_root="/repo", yolo=True)
    assert policy.decide(request("bash", "execute", "make deploy")).kind == "allow"
    assert policy.decide(request("write", "write", "/etc/x", outside=True)).kind == "allow"
    assert policy.decide(request("bash", "execute", "rm -rf /")).kind == "deny"


def test_session_grant_covers_same_tool_and_grant_key_only() -> None:
    policy = PermissionPolicy(project_root="/repo")
    first = request("bash", "execute", "make test", grant="make test")
    policy.grant_for_session(first)
    assert policy.decide(first).kind == "allow"
    assert policy.decide(request("bash", "execute", "make deploy", grant="make deploy")).kind == "ask"


def test_ask_rule_beats_a_session_grant() -> None:
    policy = PermissionPolicy.from_config([], ["bash(git push*)"], [], project_root="/repo")
    push = request("bash", "execute", "git push", grant="git push")
    policy.grant_for_session(push)
    assert policy.decide(push).kind == "ask"


def _write(path: str) -> PermissionRequest:
    return PermissionRequest("write", "write", path, f"Write {path}", grant_key="*", target_is_real=True)


def test_writing_into_a_git_dir_is_asked_whatever_allows_it(tmp_path: Path) -> None:
    root = str(tmp_path)
    for policy in (
        PermissionPolicy.from_config(["edit", "write(**)"], [], [], project_root=root),
        PermissionPolicy.from_config([], [], [], project_root=root, yolo=True),
    ):
        policy.grant_for_session(_write(f"{root}/.git/config"))
        for target in (".git/config", ".git/hooks/pre-commit", "vendor/lib/.git/config", ".git"):
            assert policy.decide(_write(f"{root}/{target}")).kind == "ask", target
        assert policy.decide(_write(f"{root}/src/.gitignore")).kind == "allow"
    named = PermissionPolicy.from_config(["edit(.git/info/exclude)"], [], [], project_root=root)
    assert named.decide(_write(f"{root}/.git/info/exclude")).kind == "allow"
    denied = PermissionPolicy.from_config([], [], ["edit(.git/**)"], project_root=root, yolo=True)
    assert denied.decide(_write(f"{root}/.git/config")).kind == "deny"


def test_a_git_dir_kept_elsewhere_counts_too(tmp_path: Path) -> None:
    work = tmp_path / "work"
    store = tmp_path / "store"  # `git init --separate-git-dir`: no .git on the git dir's path
    subprocess.run(["git", "init", "-q", f"--separate-git-dir={store}", str(work)], check=True)
    policy = PermissionPolicy.from_config([], [], [], project_root=str(work), yolo=True)

    assert policy.decide(_write(str(store / "config"))).kind == "ask"
    assert policy.decide(_write(str(work / "a.txt"))).kind == "allow"

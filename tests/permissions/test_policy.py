from __future__ import annotations

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

"""ChildPolicy: a sub-agent's permissions are its parent's, tightened by its spec, never widened."""

from __future__ import annotations

from nestor.core.permission import PermissionRequest
from nestor.permissions import PermissionPolicy
from nestor.permissions.child import ChildPolicy

ROOT = "/repo"


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


def bash(command: str) -> PermissionRequest:
    return request("bash", "execute", command, grant=command)


def child_of(
    parent: PermissionPolicy, *rules: tuple[str, str], read_only: bool = False, label: str = "agent test"
) -> ChildPolicy:
    return ChildPolicy.for_spec(parent, list(rules), read_only=read_only, label=label)


def test_a_parent_deny_stays_denied_whatever_the_child_allows() -> None:
    parent = PermissionPolicy.from_config([], [], ["bash(rm *)"], project_root=ROOT, yolo=True)
    child = child_of(parent, ("allow", "bash"), ("allow", "bash(rm *)"))
    decision = child.decide(bash("rm -rf build"))
    assert decision.kind == "deny"
    assert decision.rule is not None and str(decision.rule) == "bash(rm *)"
    assert child.decide(bash("ls")).kind == "allow"  # yolo still allows what no rule forbids


def test_a_parent_ask_stays_ask_when_the_child_allows_it() -> None:
    parent = PermissionPolicy(project_root=ROOT)
    child = child_of(parent, ("allow", "bash"), ("allow", "write"))
    assert child.decide(bash("make test")).kind == "ask"
    assert child.decide(request("write", "write", "/repo/a.py")).kind == "ask"
    # and reads inside the project stay silent
    assert child.decide(request("view", "read", "/repo/a.py")).kind == "allow"


def test_a_child_deny_rule_tightens_a_parent_allow_rule_and_yolo() -> None:
    by_rule = PermissionPolicy.from_config(["bash"], [], [], project_root=ROOT)
    by_yolo = PermissionPolicy(project_root=ROOT, yolo=True)
    for parent in (by_rule, by_yolo):
        child = child_of(parent, ("deny", "bash(git push*)"), label="agent reviewer")
        denied = child.decide(bash("git push origin main"))
        assert denied.kind == "deny"
        assert "agent reviewer" in denied.reason and "git push*" in denied.reason
        assert child.decide(bash("git status")).kind == "allow"
        assert parent.decide(bash("git push origin main")).kind == "allow"  # the parent is untouched


def test_a_child_ask_rule_tightens_a_yolo_parent() -> None:
    child = child_of(PermissionPolicy(project_root=ROOT, yolo=True), ("ask", "bash"))
    assert child.decide(bash("make")).kind == "ask"
    assert child.decide(request("write", "write", "/repo/a.py")).kind == "allow"


def test_a_read_only_child_refuses_instead_of_asking_and_says_why() -> None:
    parent = PermissionPolicy(project_root=ROOT)
    child = child_of(parent, read_only=True, label="agent explore")
    outside = child.decide(request("view", "read", "/etc/passwd", outside=True))
    assert outside.kind == "deny"
    assert "agent explore is read-only" in outside.reason
    assert "/etc/passwd is outside the project" in outside.reason  # the parent's reason is kept
    assert child.decide(bash("ls")).kind == "deny"
    assert child.decide(request("view", "read", "/repo/src/a.py")).kind == "allow"


def test_a_grant_given_in_the_child_does_not_leak_to_the_parent() -> None:
    parent = PermissionPolicy(project_root=ROOT)
    child = child_of(parent)
    child.grant_for_session(bash("make test"))
    assert child.decide(bash("make test")).kind == "allow"
    assert child.decide(bash("make lint")).kind == "ask"  # the grant covers that command only
    assert parent.decide(bash("make test")).kind == "ask"
    sibling = child_of(parent)
    assert sibling.decide(bash("make test")).kind == "ask"


def test_a_grant_the_parent_already_has_applies_to_its_children() -> None:
    parent = PermissionPolicy(project_root=ROOT)
    parent.grant_for_session(bash("make test"))
    assert child_of(parent).decide(bash("make test")).kind == "allow"


def test_a_session_grant_in_the_child_does_not_override_its_own_deny_or_ask_rule() -> None:
    child = child_of(PermissionPolicy(project_root=ROOT, yolo=True), ("ask", "bash"), ("deny", "bash(rm *)"))
    child.grant_for_session(bash("make"))
    child.grant_for_session(bash("rm x"))
    assert child.decide(bash("make")).kind == "ask"
    assert child.decide(bash("rm x")).kind == "deny"


def test_a_session_grant_in_the_child_does_not_override_an_ask_rule_of_the_parent() -> None:
    # In the parent an ask rule beats a session grant (policy.py's order of precedence); a child
    # must not get more than its parent, so the same holds for a grant given in the child.
    parent = PermissionPolicy.from_config([], ["bash(git push*)"], [], project_root=ROOT)
    parent.grant_for_session(bash("git push"))
    assert parent.decide(bash("git push")).kind == "ask"
    child = child_of(parent)
    child.grant_for_session(bash("git push"))
    assert child.decide(bash("git push")).kind == "ask"


def test_a_session_grant_in_the_child_holds_when_its_spec_allows_the_tool() -> None:
    # The parent asks, the spec's allow rule cannot widen that, the user allows it for the
    # session: the next identical call must not ask again.
    child = child_of(PermissionPolicy(project_root=ROOT), ("allow", "bash"))
    assert child.decide(bash("make")).kind == "ask"
    child.grant_for_session(bash("make"))
    assert child.decide(bash("make")).kind == "allow"


def test_nested_child_policies_intersect_every_level() -> None:
    root = PermissionPolicy.from_config([], [], ["bash(rm *)"], project_root=ROOT, yolo=True)
    child = child_of(root, ("deny", "write"), label="agent middle")
    grandchild = child_of(child, ("ask", "bash"), ("allow", "write"), label="agent leaf")
    assert grandchild.project_root == ROOT
    rm = grandchild.decide(bash("rm -rf /"))
    assert rm.kind == "deny" and rm.rule is not None and str(rm.rule) == "bash(rm *)"
    write = grandchild.decide(request("write", "write", "/repo/a.py"))
    assert write.kind == "deny" and "agent middle" in write.reason
    assert grandchild.decide(bash("make")).kind == "ask"
    assert grandchild.decide(request("fetch", "network", "https://example.org")).kind == "allow"
    assert child.decide(bash("make")).kind == "allow"  # the leaf's rule tightens only the leaf


def test_a_read_only_parent_makes_its_children_refuse_too() -> None:
    explore = child_of(PermissionPolicy(project_root=ROOT), read_only=True, label="agent explore")
    grandchild = child_of(explore)
    decision = grandchild.decide(request("view", "read", "/etc/hosts", outside=True))
    assert decision.kind == "deny" and "read-only" in decision.reason


def test_a_workspace_agent_reads_its_directory_reaches_the_network_and_nothing_else() -> None:
    parent = PermissionPolicy.from_config([], [], ["fetch(*internal*)", "bash"], project_root=ROOT)
    policy = ChildPolicy.for_workspace(
        ChildPolicy.for_spec(parent, [], read_only=False, label="x"), "/tmp/ws", label="agent agentic_fetch"
    )
    assert policy.decide(request("view", "read", "/tmp/ws/page.md")).kind == "allow"
    assert policy.decide(request("web_fetch", "network", "https://example.com/")).kind == "allow"
    outside = policy.decide(request("view", "read", "/etc/passwd", outside=True))
    assert outside.kind == "deny" and "never asks" in outside.reason
    assert policy.decide(request("write", "write", "/tmp/ws/x")).kind == "deny"
    # The ancestors' deny rules hold, through every level.
    assert policy.decide(request("fetch", "network", "http://internal.example/")).kind == "deny"
    assert policy.decide(bash("ls")).kind == "deny"

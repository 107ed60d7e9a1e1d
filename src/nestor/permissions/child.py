"""A sub-agent's permissions: its spec's rules intersected with its parent's policy.

A child never gets more than its parent: whatever the parent's policy denies stays denied, whatever
it would ask about is asked about (tagged with the child, at the root's UI) unless the user already
allowed it for the child's session, and the spec's own rules can only tighten that. A read-only
agent never asks at all: a request that would need the user is refused, so a read-only sub-agent
never stalls a run on a question.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from nestor.core.permission import PermissionRequest
from nestor.permissions.policy import Decision, PermissionPolicy, unjudged_decision
from nestor.permissions.rules import Rule, find_rule, parse_rule

_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}


@dataclass
class ChildPolicy(PermissionPolicy):
    """The policy of a sub-agent: the stricter of its parent's decision and its own rules.

    Attributes:
        parent: The parent agent's policy (itself a :class:`ChildPolicy` for nested agents).
        read_only: Refuse instead of asking (read-only agents never prompt).
        label: Names the agent in reasons, e.g. ``agent explore``.

    """

    parent: PermissionPolicy = field(default_factory=PermissionPolicy)
    read_only: bool = False
    label: str = "sub-agent"
    approve_network: bool = False

    @classmethod
    def for_workspace(cls, parent: PermissionPolicy, workspace: str, *, label: str) -> ChildPolicy:
        """The policy of an agent confined to ``workspace`` (a research agent's temporary directory).

        It reads inside ``workspace`` freely, reaches the network without asking (auto-approved,
        as a web research agent must), and is refused everything else without a question. Every
        deny rule of its ancestors still holds.
        """
        base = PermissionPolicy(rules=_deny_rules(parent), project_root=workspace)
        return cls(
            rules=[], project_root=workspace, parent=base, read_only=True, label=label, approve_network=True
        )

    @classmethod
    def for_spec(
        cls,
        parent: PermissionPolicy,
        rules: Iterable[tuple[str, str]],
        *,
        read_only: bool,
        label: str,
        source: str = "agent file",
    ) -> ChildPolicy:
        """Build the policy of a child from its parent's and its spec's ``(action, rule)`` pairs.

        Raises:
            ConfigError: A rule is not ``tool`` or ``tool(pattern)``.

        """
        parsed: list[Rule] = [parse_rule(action, text, source=source) for action, text in rules]  # pyright: ignore[reportArgumentType]
        return cls(
            rules=parsed,
            project_root=parent.project_root,
            yolo=False,
            parent=parent,
            read_only=read_only,
            label=label,
        )

    def decide(self, request: PermissionRequest) -> Decision:
        """The stricter of the parent's decision and this agent's own rules and grants."""
        inherited = self.parent.decide(request)
        own = self._own_decision(request)
        decision = inherited
        if own is not None and _STRICTNESS[own.kind] > _STRICTNESS[inherited.kind]:
            decision = own
        if decision.kind == "ask" and self.approve_network and request.action == "network":
            return Decision("allow", f"{self.label} reaches the network without asking")
        if decision.kind == "ask":
            # A grant answers the default question, never an ask rule (the parent's or the spec's).
            asked_by_rule = (inherited.kind == "ask" and inherited.rule is not None) or (
                own is not None and own.kind == "ask"
            )
            granted = {(request.tool_name, request.grant_key), (request.tool_name, "*")} & self._grants
            if granted and not asked_by_rule:
                return Decision("allow", "allowed for this session")
            if self.read_only:
                return Decision("deny", f"{self.label} is read-only and never asks: {decision.reason}")
        return decision

    def _own_decision(self, request: PermissionRequest) -> Decision | None:
        for action in ("deny", "ask", "allow"):
            rule = find_rule(self.rules, action, request, self.project_root)
            if rule is not None:
                return Decision(action, f"{self.label} rule {action} {rule}", rule)
            if (
                action == "ask"
                and (unjudged := unjudged_decision(self.rules, request, self.project_root)) is not None
            ):
                return unjudged
        return None


def _deny_rules(policy: PermissionPolicy) -> list[Rule]:
    """The deny rules of ``policy`` and of every policy it inherits from."""
    rules = [rule for rule in policy.rules if rule.action == "deny"]
    if isinstance(policy, ChildPolicy):
        rules.extend(_deny_rules(policy.parent))
    return rules

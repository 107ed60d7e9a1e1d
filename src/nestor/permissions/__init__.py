"""Layer 2: allow / ask / deny rules for tool calls, session grants, and the decisions they give."""

from nestor.permissions.policy import Decision, PermissionPolicy
from nestor.permissions.rules import Rule, parse_rule

__all__ = ["Decision", "PermissionPolicy", "Rule", "parse_rule"]

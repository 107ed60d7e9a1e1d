"""Allow / ask / deny rules for tool calls, session grants, and the decisions they give.

A layer above ``tools``, beside ``agents`` and ``checkpoints`` (the layers: ``docs/architecture.md``).
"""

from nestor.permissions.policy import Decision, PermissionPolicy
from nestor.permissions.rules import Rule, parse_rule

__all__ = ["Decision", "PermissionPolicy", "Rule", "parse_rule"]

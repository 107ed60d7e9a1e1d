"""Permission rules over MCP tools: by server or tool, globbed, asking by default."""

from __future__ import annotations

import pytest

from nestor.core.errors import ConfigError
from nestor.core.permission import PermissionRequest
from nestor.permissions.policy import PermissionPolicy


def test_permission_rules_name_mcp_tools_by_server_or_tool() -> None:
    policy = PermissionPolicy.from_config(
        ["mcp__docs__*", "mcp__gh__get_issue"], [], ["mcp__gh__delete_*"], project_root="/p"
    )

    def decide(name: str) -> str:
        return policy.decide(PermissionRequest(name, "execute", name, name)).kind

    assert decide("mcp__docs__search") == "allow"
    assert decide("mcp__gh__get_issue") == "allow"
    assert decide("mcp__gh__create_issue") == "ask"  # MCP tools ask by default
    assert decide("mcp__gh__delete_repo") == "deny"
    assert decide("mcp__docsx__search") == "ask"  # a server's rule is not a prefix of another's


def test_only_mcp_rules_may_end_their_tool_with_a_star() -> None:
    with pytest.raises(ConfigError, match=r"invalid permission rule 'bash\*'") as caught:
        PermissionPolicy.from_config(["bash*"], [], [], project_root="/p")
    assert "only MCP rules" in (caught.value.hint or "")

"""Which MCP tools a sub-agent may have, and what its MCP servers add to its pool key.

Never a tool its parent's rules deny; only read-only ones (the server's ``readOnlyHint``) for a
read-only agent.
"""

from __future__ import annotations

from collections.abc import Iterable

from nestor.agents.spec import AgentSpec
from nestor.core.permission import PermissionRequest
from nestor.permissions.policy import PermissionPolicy
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.mcp.names import is_mcp_name


def allowed_mcp_tools(
    names: Iterable[str], spec: AgentSpec, parent_policy: PermissionPolicy, catalogue: ToolCatalogue
) -> list[str]:
    """``names`` without the MCP tools the child of ``spec`` may not have (other tools pass)."""
    read_only = spec.is_read_only(catalogue)
    return [
        name
        for name in names
        if not is_mcp_name(name)
        or (not denied(parent_policy, name) and (not read_only or catalogue.has(name, "read_only")))
    ]


def denied(policy: PermissionPolicy, name: str) -> bool:
    """Whether ``policy`` denies every call of the MCP tool ``name`` (a rule, not a question)."""
    return policy.decide(PermissionRequest(name, "execute", name, f"MCP tool {name}")).kind == "deny"


def servers_key(spec: AgentSpec) -> str:
    """The MCP servers of ``spec`` as text, for a pool key: a changed server never reuses an agent."""
    own = sorted((name, config.model_dump_json()) for name, config in spec.own_mcp_servers)
    return repr((sorted(spec.mcp_servers), own))

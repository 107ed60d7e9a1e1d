"""Which MCP tools a sub-agent may have, what its MCP servers add to its pool key, which need approval.

Never a tool its parent's rules deny; only read-only ones (the server's ``readOnlyHint``) for a
read-only agent. The servers a project's agent file defines start only once the user approved them
(``nestor.tools.mcp.approval``).
"""

from __future__ import annotations

from collections.abc import Iterable

from nestor.agents.spec import AgentSpec
from nestor.config.settings import ProjectServer
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


def own_project_servers(spec: AgentSpec) -> dict[str, ProjectServer]:
    """The servers a project's agent file defines, as the user approves them; none for the user's files."""
    if spec.source != "project":
        return {}
    origin = f"agent {spec.name} ({spec.path})" if spec.path else f"agent {spec.name}"
    return {name: ProjectServer.of_config(name, origin, config) for name, config in spec.own_mcp_servers}

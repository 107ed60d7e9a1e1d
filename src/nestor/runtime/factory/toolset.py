"""The main agent's tools (declared by its spec, ``coder.md``), and an agent shell's sandbox."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nestor.agents.registry import builtin_spec
from nestor.agents.spec import AgentSpec
from nestor.config.sections import SandboxConfig
from nestor.tools.base import Tool
from nestor.tools.catalogue import BUILTIN_TOOLS, ToolCatalogue
from nestor.tools.sandbox.policy import SandboxPolicy


def main_tool_names(spec: AgentSpec, catalogue: ToolCatalogue, *, can_delegate: bool) -> list[str]:
    """The main agent's tools: the ones its spec declares (``coder.md``), in that order.

    The delegation tools are left out when ``[agents] max_depth`` allows no sub-agent.
    """
    delegation = set(catalogue.names("delegation"))
    return [name for name in spec.tools or () if can_delegate or name not in delegation]


def coder_tools() -> list[Tool[Any]]:
    """The built-in coder's tools that need no owner, in the order the model sees them."""
    return _stateless(builtin_spec("coder"))


def compact_coder_tools() -> list[Tool[Any]]:
    """The coder's tools for a small model (``coder-compact.md``) that need no owner."""
    return _stateless(builtin_spec("coder-compact"))


def _stateless(spec: AgentSpec) -> list[Tool[Any]]:
    stateless = {info.name for info in BUILTIN_TOOLS if info.stateless}
    return ToolCatalogue().build([name for name in spec.tools or () if name in stateless])


def sandbox_policy(
    tool_names: Sequence[str],
    config: SandboxConfig,
    *,
    kept_read_only: Sequence[Path] = (),
    catalogue: ToolCatalogue | None = None,
) -> SandboxPolicy:
    """The sandbox of an agent's ``bash``: read-only and offline without a write tool, else as configured.

    A write tool is one ``catalogue`` (the built-ins by default) says writes files.

    A read-only agent stays read-only even with ``mode = "off"``: its lack of write tools would
    otherwise be all that kept its shell from writing. ``kept_read_only`` (nestor's data and
    config dirs) stay read-only when the project or a temp dir holds them: a command must not
    trust a folder or write the user's config.
    """
    tools = catalogue or ToolCatalogue()
    if not any(tools.has(name, "writes_files") for name in tool_names):
        return SandboxPolicy.read_only()
    return SandboxPolicy(
        mode=config.mode,
        network=config.network,
        kept_read_only=tuple(kept_read_only),
        writable_git=config.writable_git,
    )

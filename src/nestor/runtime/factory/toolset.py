"""The built-in coder's tools that need no owner, per model size (``coder.md``, ``coder-compact.md``)."""

from __future__ import annotations

from typing import Any

from nestor.agents.registry import builtin_spec
from nestor.agents.spec import AgentSpec
from nestor.tools.base import Tool
from nestor.tools.catalogue import BUILTIN_TOOLS, ToolCatalogue


def coder_tools() -> list[Tool[Any]]:
    """The built-in coder's tools that need no owner, in the order the model sees them."""
    return _stateless(builtin_spec("coder"))


def compact_coder_tools() -> list[Tool[Any]]:
    """The coder's tools for a small model (``coder-compact.md``) that need no owner."""
    return _stateless(builtin_spec("coder-compact"))


def _stateless(spec: AgentSpec) -> list[Tool[Any]]:
    stateless = {info.name for info in BUILTIN_TOOLS if info.stateless}
    return ToolCatalogue().build([name for name in spec.tools or () if name in stateless])

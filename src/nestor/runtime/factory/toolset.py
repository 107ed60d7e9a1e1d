"""The tool sets of the main coder agent, and its shell's sandbox, from the tool catalogue."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nestor.config import SandboxConfig
from nestor.tools.base import Tool
from nestor.tools.catalogue import BUILTIN_TOOLS, ToolCatalogue
from nestor.tools.sandbox.policy import SandboxPolicy

CODER_TOOL_NAMES = tuple(info.name for info in BUILTIN_TOOLS if info.stateless)
"""The main coder agent's own tools, in the order the model sees them: every built-in tool that
needs nothing but its call context (its todo list and delegation come on top)."""

_LEFT_OUT_FOR_SMALL_MODELS = frozenset({"write", "fetch"})
COMPACT_CODER_TOOL_NAMES = tuple(name for name in CODER_TOOL_NAMES if name not in _LEFT_OUT_FOR_SMALL_MODELS)
"""The coder's tools for a small model: reading, searching, editing and running, nothing else.

Every tool definition costs prompt tokens on each request and each extra tool is one more for a
small model to confuse; ``write`` (``edit`` covers changes) and ``fetch`` are left out.
"""


def coder_tool_names(catalogue: ToolCatalogue, *, compact: bool, can_delegate: bool) -> list[str]:
    """The main coder agent's tools, in the order the model sees them.

    A small model (``compact``) gets :data:`COMPACT_CODER_TOOL_NAMES`, no todo list (it gains
    little from one, and pays for its schema) and of the delegation tools only ``task``.
    """
    names = list(COMPACT_CODER_TOOL_NAMES if compact else CODER_TOOL_NAMES)
    if not compact:
        names.append("todo_write")
    if can_delegate:
        names.extend(["task"] if compact else catalogue.names("delegation"))
    return names


def coder_tools() -> list[Tool[Any]]:
    """Every tool of the main coder agent that needs no owner, in the order the model sees them."""
    return ToolCatalogue().build(CODER_TOOL_NAMES)


def compact_coder_tools() -> list[Tool[Any]]:
    """The coder's tools for a small model (see :data:`COMPACT_CODER_TOOL_NAMES`)."""
    return ToolCatalogue().build(COMPACT_CODER_TOOL_NAMES)


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
    return SandboxPolicy(mode=config.mode, network=config.network, kept_read_only=tuple(kept_read_only))

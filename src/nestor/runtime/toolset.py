"""The tool sets agents get, and fresh tool instances by name for sub-agents."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nestor.config import SandboxConfig
from nestor.tools.base import Tool
from nestor.tools.sandbox.policy import SandboxPolicy

CODER_TOOL_NAMES = ("view", "ls", "glob", "grep", "write", "edit", "bash", "fetch")
"""The main coder agent's own tools, in the order the model sees them (delegation comes on top)."""

COMPACT_CODER_TOOL_NAMES = ("view", "ls", "glob", "grep", "edit", "bash")
"""The coder's tools for a small model: reading, searching, editing and running, nothing else.

Every tool definition costs prompt tokens on each request and each extra tool is one more for a
small model to confuse; ``write`` (``edit`` covers changes) and ``fetch`` are left out.
"""

WRITE_TOOL_NAMES = frozenset({"write", "edit"})
"""Tools that change files; an agent with neither runs its shell read-only."""


def _constructors() -> dict[str, Callable[[], Tool[Any]]]:
    from nestor.tools.bash import BashTool
    from nestor.tools.edit import EditTool
    from nestor.tools.fetch import FetchTool
    from nestor.tools.glob import GlobTool
    from nestor.tools.grep import GrepTool
    from nestor.tools.ls import LsTool
    from nestor.tools.view import ViewTool
    from nestor.tools.write import WriteTool

    return {
        "view": ViewTool,
        "ls": LsTool,
        "glob": GlobTool,
        "grep": GrepTool,
        "write": WriteTool,
        "edit": EditTool,
        "bash": BashTool,
        "fetch": FetchTool,
    }


def stateless_tools(names: Sequence[str]) -> list[Tool[Any]]:
    """Fresh instances of the tools named ``names`` that need nothing but their call context.

    Names of other tools (``todo_write``, ``task``, ...) are skipped: whoever owns their state
    builds them.
    """
    constructors = _constructors()
    return [constructors[name]() for name in names if name in constructors]


def coder_tools() -> list[Tool[Any]]:
    """Every tool of the main coder agent, in the order the model sees them."""
    return stateless_tools(CODER_TOOL_NAMES)


def compact_coder_tools() -> list[Tool[Any]]:
    """The coder's tools for a small model (see :data:`COMPACT_CODER_TOOL_NAMES`)."""
    return stateless_tools(COMPACT_CODER_TOOL_NAMES)


def sandbox_policy(
    tool_names: Sequence[str], config: SandboxConfig, *, kept_read_only: Sequence[Path] = ()
) -> SandboxPolicy:
    """The sandbox of an agent's ``bash``: read-only and offline without a write tool, else as configured.

    A read-only agent stays read-only even with ``mode = "off"``: its lack of write tools would
    otherwise be all that kept its shell from writing. ``kept_read_only`` (nestor's data and
    config dirs) stay read-only when the project or a temp dir holds them: a command must not
    trust a folder or write the user's config.
    """
    if WRITE_TOOL_NAMES.isdisjoint(tool_names):
        return SandboxPolicy.read_only()
    return SandboxPolicy(mode=config.mode, network=config.network, kept_read_only=tuple(kept_read_only))

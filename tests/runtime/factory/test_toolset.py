from __future__ import annotations

from nestor.agents.registry import builtin_spec
from nestor.runtime.factory.toolset import coder_tools
from nestor.tools.catalogue import BUILTIN_TOOLS


def test_coder_md_declares_every_built_in_tool_that_needs_no_owner() -> None:
    # A new built-in tool reaches the main agent by its line in coder.md; this catches a forgotten one.
    declared = set(builtin_spec("coder").tools or ())
    assert {info.name for info in BUILTIN_TOOLS if info.stateless} <= declared
    assert [tool.name for tool in coder_tools()] == [
        "view",
        "ls",
        "glob",
        "grep",
        "write",
        "edit",
        "bash",
        "fetch",
    ]

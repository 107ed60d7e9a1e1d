from __future__ import annotations

from pathlib import Path

import pytest

from nestor.agents.registry import builtin_spec
from nestor.config.sections import SandboxConfig
from nestor.runtime.factory.toolset import coder_tools, main_tool_names, sandbox_policy
from nestor.tools.catalogue import BUILTIN_TOOLS, BuiltByOwner, ToolCatalogue
from nestor.tools.sandbox.policy import SandboxPolicy


@pytest.mark.parametrize("mode", ["read-only", "workspace-write", "off"])
def test_an_agent_without_write_or_edit_gets_a_read_only_offline_shell(mode: str) -> None:
    config = SandboxConfig.model_validate({"mode": mode, "network": True})

    policy = sandbox_policy(("view", "grep", "bash", "fetch"), config)

    assert policy == SandboxPolicy.read_only()
    assert not policy.allows_network


@pytest.mark.parametrize("writer", ["write", "edit"])
def test_an_agent_that_writes_gets_the_configured_sandbox(writer: str) -> None:
    assert sandbox_policy(("view", writer, "bash"), SandboxConfig()) == SandboxPolicy("workspace-write", True)
    off = SandboxConfig(mode="off", network=False)
    assert sandbox_policy((writer, "bash"), off) == SandboxPolicy("off", False)


def test_nestors_own_dirs_stay_read_only_in_a_writing_agents_sandbox(tmp_path: Path) -> None:
    policy = sandbox_policy(("write", "bash"), SandboxConfig(), kept_read_only=(tmp_path / "data",))
    (tmp_path / "data").mkdir()
    assert (tmp_path / "data").resolve() in policy.protected_paths(tmp_path)


def test_a_registered_tool_that_writes_files_gives_the_configured_sandbox() -> None:
    catalogue = ToolCatalogue()
    catalogue.register("docs_write", BuiltByOwner("an MCP server"), traits=["writes_files"])
    names = ("view", "docs_write", "bash")
    assert sandbox_policy(names, SandboxConfig(), catalogue=catalogue) == SandboxPolicy(
        "workspace-write", True
    )
    assert sandbox_policy(names, SandboxConfig()) == SandboxPolicy.read_only()  # the built-ins alone


# Declared by coder.md, built only where a language server runs for the project.
CODE_INTELLIGENCE = ("definition", "references", "hover", "symbols", "diagnostics")


def test_the_main_coder_tools_per_model_size_and_delegation() -> None:
    catalogue = ToolCatalogue()
    coder, compact = builtin_spec("coder"), builtin_spec("coder-compact")
    assert main_tool_names(coder, catalogue, can_delegate=True) == [
        *("view", "ls", "glob", "grep", *CODE_INTELLIGENCE, "write", "edit", "bash", "fetch", "todo_write"),
        *("task", "task_status", "task_output", "task_cancel", "agentic_fetch"),
    ]
    assert main_tool_names(coder, catalogue, can_delegate=False) == [
        *("view", "ls", "glob", "grep", *CODE_INTELLIGENCE, "write", "edit", "bash", "fetch", "todo_write"),
    ]
    assert main_tool_names(compact, catalogue, can_delegate=True) == [
        *("view", "ls", "glob", "grep", "edit", "bash", "task"),
    ]
    assert main_tool_names(compact, catalogue, can_delegate=False) == [
        *("view", "ls", "glob", "grep", "edit", "bash"),
    ]


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

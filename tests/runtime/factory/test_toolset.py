from __future__ import annotations

from pathlib import Path

import pytest

from nestor.config import SandboxConfig
from nestor.runtime.factory.toolset import coder_tool_names, sandbox_policy
from nestor.tools.catalogue import BuiltByOwner, ToolCatalogue
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


def test_the_main_coder_tools_per_model_size_and_delegation() -> None:
    catalogue = ToolCatalogue()
    assert coder_tool_names(catalogue, compact=False, can_delegate=True) == [
        *("view", "ls", "glob", "grep", "write", "edit", "bash", "fetch", "todo_write"),
        *("task", "task_status", "task_output", "task_cancel", "agentic_fetch"),
    ]
    assert coder_tool_names(catalogue, compact=False, can_delegate=False) == [
        *("view", "ls", "glob", "grep", "write", "edit", "bash", "fetch", "todo_write"),
    ]
    assert coder_tool_names(catalogue, compact=True, can_delegate=True) == [
        *("view", "ls", "glob", "grep", "edit", "bash", "task"),
    ]
    assert coder_tool_names(catalogue, compact=True, can_delegate=False) == [
        *("view", "ls", "glob", "grep", "edit", "bash"),
    ]

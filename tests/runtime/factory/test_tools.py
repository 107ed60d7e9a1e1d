"""The tool builder: the tools it configures are made once, by it; the catalogue makes the rest."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from nestor.config.sections import SandboxConfig
from nestor.runtime.factory.tools import ToolBuilder, sandbox_policy
from nestor.tools.base import Tool
from nestor.tools.bash import BashTool
from nestor.tools.catalogue import BUILTIN_TOOLS, BuiltByOwner, ToolCatalogue, ToolInfo
from nestor.tools.fetch import FetchTool
from nestor.tools.sandbox.policy import SandboxPolicy
from nestor.tools.view import ViewTool
from tests.runtime.tree_support import TreeHarness


def counting(info: ToolInfo, calls: list[str]) -> ToolInfo:
    """``info`` with a factory that records each call before building the tool as before."""
    factory = info.factory
    assert callable(factory)

    def build() -> Tool[Any]:
        calls.append(info.name)
        return factory()

    return dataclasses.replace(info, factory=build)


def test_configured_tools_are_built_once_by_the_builder_and_the_rest_by_the_catalogue(tmp_path: Path) -> None:
    calls: list[str] = []
    catalogue = ToolCatalogue(
        counting(info, calls) if info.name in {"view", "bash", "fetch"} else info for info in BUILTIN_TOOLS
    )
    harness = TreeHarness(tmp_path, models={}, catalogue=catalogue)
    builder = ToolBuilder(
        harness.factory.settings, catalogue, harness.sessions, config_dir=tmp_path / "config"
    )

    first = builder.build(["view", "bash", "fetch"], "session-1", harness.tree)
    again = builder.build(["fetch"], "session-1", harness.tree)
    other = builder.build(["fetch"], "session-2", harness.tree)

    assert calls == ["view"]  # the shell and fetch are the builder's: no throw-away instance
    view, bash, fetch = first
    assert isinstance(view, ViewTool) and isinstance(bash, BashTool) and isinstance(fetch, FetchTool)
    assert isinstance(again[0], FetchTool) and isinstance(other[0], FetchTool)
    assert again[0].cache is fetch.cache  # one page cache per session
    assert other[0].cache is not fetch.cache
    assert fetch.client is builder.web_client()  # every web tool goes through the one safe client


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

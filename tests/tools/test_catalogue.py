"""The tool catalogue: the built-in tools and their traits, lazy factories, tools registered at run time."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from nestor.tools.base import Tool, ToolContext
from nestor.tools.catalogue import BUILTIN_TOOLS, BuiltByOwner, ToolCatalogue


def test_the_built_in_tools_in_the_order_lists_show_them() -> None:
    assert ToolCatalogue().names() == (
        *("view", "ls", "glob", "grep", "definition", "references", "hover", "symbols", "diagnostics"),
        *("write", "edit", "bash", "fetch", "task", "todo_write"),
        *("task_status", "task_output", "task_cancel", "web_search", "web_fetch", "agentic_fetch"),
    )


def test_the_traits_of_the_built_in_tools() -> None:
    catalogue = ToolCatalogue()
    # Read-only: changes no file (the one source: tool classes no longer say it themselves).
    assert set(catalogue.names("read_only")) == {
        *("view", "ls", "glob", "grep", "web_search", "web_fetch", "todo_write"),
        *("definition", "references", "hover", "symbols", "diagnostics"),
        *("fetch", "task_status", "task_output", "agentic_fetch"),
    }
    assert catalogue.names("writes_files") == ("write", "edit")
    assert catalogue.names("delegation") == (
        "task",
        "task_status",
        "task_output",
        "task_cancel",
        "agentic_fetch",
    )
    assert catalogue.names("searches_web") == ("web_search",)
    assert catalogue.names("user_facing") == ()
    assert catalogue.names("read_only", "searches_web") == ("web_search",)
    assert catalogue.has("grep", "read_only") and not catalogue.has("bash", "read_only")
    assert not catalogue.has("nope", "read_only")


def test_tools_come_with_the_tool_that_brings_them() -> None:
    catalogue = ToolCatalogue()
    assert catalogue.companions(["task"]) == ("task_status", "task_output", "task_cancel")
    assert catalogue.companions(["view", "fetch"]) == ("web_search", "web_fetch")
    assert catalogue.companions(["view", "bash"]) == ()


def test_every_name_an_agent_file_may_use() -> None:
    aliases = ToolCatalogue().aliases()
    assert {alias: tool for alias, tool in aliases.items() if alias != tool} == {
        **{"read": "view", "multiedit": "edit", "webfetch": "web_fetch", "websearch": "web_search"},
        **{"agent": "task", "todowrite": "todo_write", "read_file": "view", "list_files": "ls"},
        **{"semantic_search": "grep", "list": "ls", "patch": "edit", "write_file": "write"},
        **{"replace": "edit", "run_shell_command": "bash", "search_file_content": "grep"},
        **{"list_directory": "ls", "google_web_search": "web_search", "read_many_files": "view"},
        "write_todos": "todo_write",
    }
    assert all(aliases[info.name] == info.name for info in BUILTIN_TOOLS)


def test_permission_rules_spell_some_tools_the_claude_code_way() -> None:
    assert ToolCatalogue().rule_aliases() == {
        "read": "view",
        "multiedit": "edit",
        "webfetch": "fetch",  # a WebFetch rule is fetch's, which governs web_fetch too
        "websearch": "web_search",
        "agent": "task",
    }


def test_each_factory_builds_its_own_tool_and_owner_built_tools_are_skipped() -> None:
    catalogue = ToolCatalogue()
    names = catalogue.names()
    built = catalogue.build(names)
    stateless = [info.name for info in catalogue if info.stateless]
    assert [tool.name for tool in built] == stateless
    assert stateless == ["view", "ls", "glob", "grep", "write", "edit", "bash", "fetch"]
    owned = [info for info in catalogue if isinstance(info.factory, BuiltByOwner)]
    assert all(info.factory.owner for info in owned if isinstance(info.factory, BuiltByOwner))
    assert catalogue.build(["bash", "nope", "task", "view"])[0].name == "bash"
    assert [tool.name for tool in catalogue.build(["bash", "nope", "task", "view"])] == ["bash", "view"]
    assert catalogue.build(["view"])[0] is not catalogue.build(["view"])[0]  # fresh each time


def test_importing_the_catalogue_imports_no_tool_and_nothing_heavy() -> None:
    watched = ("nestor", "httpx", "pydantic", "tree_sitter")
    code = (
        "import json, sys; import nestor.tools.catalogue; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({watched!r}))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    assert loaded == {"nestor", "nestor.tools", "nestor.tools.catalogue"}


# -- tools registered at run time -----------------------------------------------------------------


class _NoParams(BaseModel):
    pass


class DocsSearchTool(Tool[_NoParams]):
    """Stands in for an MCP server's read-only tool."""

    name: ClassVar[str] = "docs_search"
    params_model: ClassVar[type[BaseModel]] = _NoParams
    read_only: ClassVar[bool] = True

    @property
    def description(self) -> str:
        return "Search the docs."

    async def run(self, params: _NoParams, ctx: ToolContext) -> str:
        return "found"


def test_a_registered_tool_joins_the_derived_sets_and_is_built() -> None:
    catalogue = ToolCatalogue()
    info = catalogue.register("docs_search", DocsSearchTool, traits=["read_only"], aliases=["SearchDocs"])
    assert info.stateless and "docs_search" in catalogue and catalogue.get("docs_search") == info
    assert catalogue.names()[-1] == "docs_search"
    assert "docs_search" in catalogue.names("read_only")
    assert catalogue.aliases()["searchdocs"] == "docs_search"
    built: list[Tool[Any]] = catalogue.build(["docs_search", "view"])
    assert [tool.name for tool in built] == ["docs_search", "view"]
    assert "docs_search" not in ToolCatalogue()  # each catalogue is its own: nothing global changed


def test_a_tool_its_owner_builds_is_listed_with_its_traits() -> None:
    catalogue = ToolCatalogue()
    catalogue.register("ask_user", BuiltByOwner("the terminal UI"), traits=["user_facing"])
    assert catalogue.names("user_facing") == ("ask_user",)
    assert catalogue.build(["ask_user"]) == []


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("view", {}, "the name 'view' is already 'view''s"),
        ("View", {}, "the name 'view' is already 'view''s"),
        ("docs", {"aliases": ["read_file"]}, "the name 'read_file' is already 'view''s"),
        ("", {}, "is empty or has spaces"),
        ("two words", {}, "is empty or has spaces"),
        ("docs", {"traits": ["network"]}, "unknown trait 'network'; traits are read_only, writes_files"),
        ("docs", {"aliases": [" "]}, "has an empty alias"),
    ],
)
def test_a_registration_that_cannot_work_is_refused_in_one_line(
    name: str, kwargs: dict[str, Any], message: str
) -> None:
    catalogue = ToolCatalogue()
    with pytest.raises(ValueError) as raised:
        catalogue.register(name, DocsSearchTool, **kwargs)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert catalogue.names() == ToolCatalogue().names()


def test_claude_code_s_current_and_earlier_names_name_a_tool_and_the_payload_carries_the_current() -> None:
    catalogue = ToolCatalogue()
    assert catalogue.hook_names("task") == ("task", "Task", "Agent")  # Agent since Claude Code 2.1.63
    assert catalogue.hook_names("bash") == ("bash", "Bash")
    assert catalogue.hook_names("task_status") == ("task_status",)
    assert [catalogue.named_by_hooks(name) for name in ("Agent", "Task", "Bash", "Read", "Nope")] == [
        "task",
        "task",
        "bash",
        "view",
        None,
    ]

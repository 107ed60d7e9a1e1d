"""The tool catalogue: every tool nestor knows, what it is, and how it is built.

One entry per tool: its name, its factory, its traits (read-only, writes files, delegation, ...),
the names other assistants' agent files give it (``Read``, ``run_shell_command``...), the names
permission rules may give it (Claude Code's ``Read``, ``WebFetch``...), what its permission
rules match (a path, a URL, a command) and which tools come with it. Every tool list of nestor is
derived from here: which tools are read-only, which ones a sub-agent never inherits, which names
an agent file may use, which rule governs which tool.

A :class:`ToolCatalogue` is an instance, not a process-wide registry: the app owns one (the
built-ins by default) and hands it to what needs it, tools added at run time (MCP, LSP) are
registered into that instance with :meth:`ToolCatalogue.register`, and a test builds its own.

Importing this module imports no tool: built-in factories import their module when called, so the
catalogue costs nothing at start-up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

if TYPE_CHECKING:
    from nestor.tools.base import Tool

Trait: TypeAlias = Literal["read_only", "writes_files", "delegation", "user_facing", "searches_web"]
"""What a tool is, as the rest of nestor asks:

- ``read_only``: changes nothing outside the agent's own session (the todo list is the session's);
  an agent file whose tools all are read-only makes a read-only agent.
- ``writes_files``: changes files; an agent with none of these runs its shell read-only.
- ``delegation``: starts or manages sub-agents; only agents allowed to delegate get these.
- ``user_facing``: acts on the user directly; never a sub-agent's, whatever its spec says.
- ``searches_web``: counts against a sub-agent's search budget.
"""
TRAITS: tuple[Trait, ...] = get_args(Trait)

RuleTarget: TypeAlias = Literal["path", "url", "command", "other"]
"""What a permission rule's pattern is matched against for a tool (see ``nestor.permissions.rules``)."""

ToolFactory: TypeAlias = Callable[[], "Tool[Any]"]
"""Builds a fresh tool that needs nothing but its call context."""


@dataclass(frozen=True, slots=True)
class BuiltByOwner:
    """The factory of a tool that needs state only its owner has (a session's todo list, the tree).

    The catalogue lists such tools with their traits; their owner builds them.

    Attributes:
        owner: Who builds it, and from what.

    """

    owner: str


@dataclass(frozen=True, slots=True)
class LazyFactory:
    """A factory that imports its tool's module only when called (start-up time matters)."""

    module: str
    attribute: str

    def __call__(self) -> Tool[Any]:
        """Import the module and build a fresh tool."""
        tool_class: Callable[[], Tool[Any]] = getattr(importlib.import_module(self.module), self.attribute)
        return tool_class()


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """One tool of the catalogue.

    Attributes:
        name: The name the model calls it by.
        factory: Builds a fresh instance, or :class:`BuiltByOwner` when its owner does.
        traits: What it is (see :data:`Trait`).
        aliases: Other assistants' names for it in agent files, lower case (``read``, ``read_file``).
        rule_aliases: Other names a permission rule may give it, lower case (Claude Code's ``read``).
        governed_by: Permission rule names that govern it besides its own (the same capability:
            a ``view`` rule governs ``grep``).
        rule_target: What its permission rules' patterns are matched against.
        comes_with: The tool that brings this one along: an agent that may use ``comes_with`` may
            use this one too (``task_status`` comes with ``task``, ``web_fetch`` with ``fetch``).
        hook_name: Claude Code's name of it, which hooks' matchers may give and their payloads
            carry (``Bash``, ``Read``); None where Claude Code has none.
        hook_aliases: Claude Code's earlier names of it, which hooks written then still give as
            matchers (``Task``, ``Agent`` since Claude Code 2.1.63); payloads carry ``hook_name``.

    """

    name: str
    factory: ToolFactory | BuiltByOwner
    traits: frozenset[Trait] = frozenset()
    aliases: tuple[str, ...] = ()
    rule_aliases: tuple[str, ...] = ()
    governed_by: tuple[str, ...] = ()
    rule_target: RuleTarget = "other"
    comes_with: str | None = None
    hook_name: str | None = None
    hook_aliases: tuple[str, ...] = ()

    @property
    def stateless(self) -> bool:
        """True when the catalogue can build it (it needs nothing but its call context)."""
        return not isinstance(self.factory, BuiltByOwner)


def _lazy(module: str, attribute: str) -> LazyFactory:
    return LazyFactory(f"nestor.tools.{module}", attribute)


_TREE = BuiltByOwner("the agent tree (nestor.runtime.tree.task_tool.delegation_tools)")
_WEB = BuiltByOwner("the app: the one web client and the session's cache")
# Built only where a language server can run for the project: elsewhere no agent sees them.
_LSP = BuiltByOwner("the app: the project's language servers (nestor.tools.lsp.manager)")


def _code_intelligence(name: str) -> ToolInfo:
    return ToolInfo(name, _LSP, frozenset({"read_only"}), governed_by=("view",), rule_target="path")


BUILTIN_TOOLS: tuple[ToolInfo, ...] = (
    ToolInfo(
        "view",
        _lazy("view", "ViewTool"),
        frozenset({"read_only"}),
        aliases=("read", "read_file", "read_many_files"),
        rule_aliases=("read",),
        rule_target="path",
        hook_name="Read",
    ),
    ToolInfo(
        "ls",
        _lazy("ls", "LsTool"),
        frozenset({"read_only"}),
        aliases=("list_files", "list", "list_directory"),
        governed_by=("view",),
        rule_target="path",
        hook_name="LS",
    ),
    ToolInfo(
        "glob",
        _lazy("glob", "GlobTool"),
        frozenset({"read_only"}),
        governed_by=("view",),
        rule_target="path",
        hook_name="Glob",
    ),
    ToolInfo(
        "grep",
        _lazy("grep", "GrepTool"),
        frozenset({"read_only"}),
        aliases=("semantic_search", "search_file_content"),
        governed_by=("view",),
        rule_target="path",
        hook_name="Grep",
    ),
    *(_code_intelligence(name) for name in ("definition", "references", "hover", "symbols", "diagnostics")),
    ToolInfo(
        "write",
        _lazy("write", "WriteTool"),
        frozenset({"writes_files"}),
        aliases=("write_file",),
        governed_by=("edit",),
        rule_target="path",
        hook_name="Write",
    ),
    ToolInfo(
        "edit",
        _lazy("edit", "EditTool"),
        frozenset({"writes_files"}),
        aliases=("multiedit", "patch", "replace"),
        rule_aliases=("multiedit",),
        governed_by=("write",),
        rule_target="path",
        hook_name="Edit",
    ),
    ToolInfo(
        "bash",
        _lazy("bash", "BashTool"),
        aliases=("run_shell_command",),
        rule_target="command",
        hook_name="Bash",
    ),
    # Claude Code's WebFetch permission rule is fetch's (it governs web_fetch too); in an agent
    # file, WebFetch means web_fetch.
    ToolInfo(
        "fetch",
        _lazy("fetch", "FetchTool"),
        frozenset({"read_only"}),
        rule_aliases=("webfetch",),
        rule_target="url",
        hook_name="WebFetch",
    ),
    ToolInfo(
        "task",
        _TREE,
        frozenset({"delegation"}),
        aliases=("agent",),
        rule_aliases=("agent",),
        hook_name="Agent",
        hook_aliases=("Task",),
    ),
    ToolInfo(
        "todo_write",
        BuiltByOwner("the app: the session's todo list"),
        frozenset({"read_only"}),
        aliases=("todowrite", "write_todos"),
        hook_name="TodoWrite",
    ),
    ToolInfo("task_status", _TREE, frozenset({"delegation", "read_only"}), comes_with="task"),
    ToolInfo("task_output", _TREE, frozenset({"delegation", "read_only"}), comes_with="task"),
    ToolInfo("task_cancel", _TREE, frozenset({"delegation"}), comes_with="task"),
    ToolInfo(
        "web_search",
        _WEB,
        frozenset({"read_only", "searches_web"}),
        aliases=("websearch", "google_web_search"),
        rule_aliases=("websearch",),
        comes_with="fetch",
        hook_name="WebSearch",
    ),
    ToolInfo(
        "web_fetch",
        _WEB,
        frozenset({"read_only"}),
        aliases=("webfetch",),
        governed_by=("fetch",),
        rule_target="url",
        comes_with="fetch",
        hook_name="WebFetch",
    ),
    ToolInfo(
        "agentic_fetch",
        BuiltByOwner("the app: the agent tree and the web client"),
        frozenset({"delegation", "read_only"}),
    ),
)
"""nestor's own tools, in the order tool lists are shown."""


class ToolCatalogue:
    """The tools one nestor process knows: the built-ins, then any registered at run time.

    Args:
        tools: The tools to start from (the built-ins by default), in display order.

    """

    def __init__(self, tools: Iterable[ToolInfo] = BUILTIN_TOOLS) -> None:
        self._tools: dict[str, ToolInfo] = {}
        for tool in tools:
            self._add(tool)

    def register(
        self,
        name: str,
        factory: ToolFactory | BuiltByOwner,
        *,
        traits: Iterable[Trait] = (),
        aliases: Iterable[str] = (),
    ) -> ToolInfo:
        """Add a tool known only at run time (an MCP server's, an LSP's) after the others.

        Raises:
            ValueError: The name or an alias is empty, already taken, or a trait is unknown.

        """
        info = ToolInfo(
            name.strip(),
            factory,
            frozenset(traits),
            aliases=tuple(alias.strip().lower() for alias in aliases),
        )
        unknown = sorted(set(info.traits) - set(TRAITS))
        if unknown:
            raise ValueError(f"tool {name!r}: unknown trait {unknown[0]!r}; traits are {', '.join(TRAITS)}")
        self._add(info)
        return info

    def _add(self, info: ToolInfo) -> None:
        if not info.name or any(char.isspace() for char in info.name):
            raise ValueError(
                f"tool name {info.name!r} is empty or has spaces; give a name like 'search_docs'"
            )
        taken = self.aliases()
        for name in (info.name.lower(), *info.aliases):
            if not name:
                raise ValueError(f"tool {info.name!r} has an empty alias")
            if name in taken:
                raise ValueError(
                    f"tool {info.name!r}: the name {name!r} is already {taken[name]!r}'s; "
                    "register it under another"
                )
        self._tools[info.name] = info

    def __iter__(self) -> Iterator[ToolInfo]:
        return iter(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> ToolInfo | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def names(self, *traits: Trait) -> tuple[str, ...]:
        """The names of the tools that have every one of ``traits`` (all of them without), in order."""
        return tuple(info.name for info in self._tools.values() if info.traits.issuperset(traits))

    def has(self, name: str, trait: Trait) -> bool:
        """True when the tool called ``name`` is known and has ``trait``."""
        info = self._tools.get(name)
        return info is not None and trait in info.traits

    def hook_names(self, name: str) -> tuple[str, ...]:
        """The names hooks' matchers read for tool ``name``: its own, then Claude Code's.

        Claude Code's earlier names come before its current one, which is last: the payload's
        ``tool_name``.
        """
        info = self._tools.get(name)
        if info is None or not info.hook_name:
            return (name,)
        return (name, *info.hook_aliases, info.hook_name)

    def named_by_hooks(self, name: str) -> str | None:
        """The tool Claude Code's name ``name`` (current or earlier: ``Bash``, ``Task``) stands for."""
        return next(
            (info.name for info in self._tools.values() if name in (info.hook_name, *info.hook_aliases)), None
        )

    def aliases(self) -> dict[str, str]:
        """Every name an agent file may use (lower case: the tools' own and their aliases) -> the tool."""
        known: dict[str, str] = {}
        for info in self._tools.values():
            known.update(dict.fromkeys(info.aliases, info.name))
        known.update({info.name.lower(): info.name for info in self._tools.values()})
        return known

    def rule_aliases(self) -> dict[str, str]:
        """The other names permission rules may give tools (lower case) -> the tool."""
        return {alias: info.name for info in self._tools.values() for alias in info.rule_aliases}

    def companions(self, names: Iterable[str]) -> tuple[str, ...]:
        """The tools that come with any of ``names`` (see :attr:`ToolInfo.comes_with`), in order."""
        given = set(names)
        return tuple(info.name for info in self._tools.values() if info.comes_with in given)

    def build(self, names: Sequence[str]) -> list[Tool[Any]]:
        """Fresh instances of the tools named ``names`` that the catalogue can build, in that order.

        Names of tools built by their owners (``todo_write``, ``task``, ...) and unknown names are
        skipped: whoever owns their state builds them.
        """
        tools: list[Tool[Any]] = []
        for name in names:
            info = self._tools.get(name)
            if info is not None and not isinstance(info.factory, BuiltByOwner):
                tools.append(info.factory())
        return tools

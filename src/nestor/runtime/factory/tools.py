"""Fresh tool instances by name, for one agent's session: the app's tool source.

Most tools come straight from the catalogue; the ones that need an owner are made here: the shell
with its sandbox, the todo list of the session, the delegation tools of the tree, and the web
tools, all through one SSRF-safe client, with per-session caches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nestor.config.sections import SandboxConfig
from nestor.config.settings import Settings
from nestor.runtime.features.agentic_fetch import AgenticFetchTool
from nestor.runtime.features.todos import CompletionCheckHook, persist_todos, todo_list_from_metadata
from nestor.runtime.kernel.hooks import Hook
from nestor.runtime.tree.delegation import AgentTree
from nestor.runtime.tree.task_tool import delegation_tools
from nestor.store.sessions import SessionStore
from nestor.tools.base import Tool
from nestor.tools.bash import BashTool
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.sandbox.policy import SandboxPolicy
from nestor.tools.todo import TodoList, TodoWriteTool

if TYPE_CHECKING:
    from nestor.tools.editor_files import EditorFiles
    from nestor.tools.lsp.manager import LspManager
    from nestor.tools.search_backends import SearchBackend
    from nestor.tools.web.cache import WebCache
    from nestor.tools.web.client import SafeHttpClient
    from nestor.tools.web_search import SearchCache


class ToolBuilder:
    """Builds the tools of every agent of one process.

    Attributes:
        search_backend: Where web_search searches; None is ddgs (tests put a recorded back end here).
        notify: Shows the user a one-line notice (what the shell sandbox cannot do here, once).
        lsp: The project's language servers; where one can run, ``view``, ``edit`` and ``write``
            use them and the code-intelligence tools are built.
        files: The editor nestor runs in (``nestor acp`` where the client offers ``fs/*``):
            ``view``, ``edit`` and ``write`` read and write through it.

    """

    def __init__(
        self,
        settings: Settings,
        catalogue: ToolCatalogue,
        sessions: SessionStore,
        *,
        config_dir: Path,
        notify: Callable[[str], None] = lambda _message: None,
        lsp: LspManager | None = None,
        files: EditorFiles | None = None,
    ) -> None:
        self._settings = settings
        self._catalogue = catalogue
        self._sessions = sessions
        self._config_dir = config_dir
        self.notify = notify
        self.lsp = lsp
        self.files = files
        self.search_backend: SearchBackend | None = None
        self._todos: dict[str, TodoList] = {}
        self._web_client: SafeHttpClient | None = None
        self._web_caches: dict[str, WebCache] = {}
        self._search_caches: dict[str, SearchCache] = {}
        self._sandbox_notice_given = False

    def build(self, names: Sequence[str], session_id: str, tree: AgentTree) -> list[Tool[Any]]:
        """Fresh tools named ``names`` for session ``session_id``, in that order.

        The tools this builder configures (the sandboxed shell, the session's todo list and web
        caches, the tree's tools) are made here; the catalogue's own factories make the rest.
        """
        built = self._configured(names, session_id, tree)
        rest = [name for name in names if name not in built]
        built.update({tool.name: tool for tool in self._catalogue.build(rest)})
        return [built[name] for name in names if name in built]

    def _configured(self, names: Sequence[str], session_id: str, tree: AgentTree) -> dict[str, Tool[Any]]:
        """The tools among ``names`` that need this builder's settings, session state or tree.

        Where a language server runs, view, edit and write with it and the code-intelligence tools.
        """
        built: dict[str, Tool[Any]] = {}
        if "bash" in names:
            built["bash"] = BashTool(
                sandbox=sandbox_policy(
                    names,
                    self._settings.sandbox,
                    kept_read_only=(self._settings.data_dir, self._config_dir),
                    catalogue=self._catalogue,
                ),
                notify=self._sandbox_notice,
                neutralize_repository_git=not self._settings.project_trusted,
            )
        if "todo_write" in names:
            built["todo_write"] = TodoWriteTool(
                self._todo_list(session_id), on_change=persist_todos(self._sessions, session_id)
            )
        if any(self._catalogue.has(name, "delegation") for name in names):
            built.update({tool.name: tool for tool in delegation_tools(tree)})
        built.update(self._web_tools(tree, names, session_id))
        if self.lsp is not None and self.lsp.available():
            built.update(_language_tools(self.lsp, names, self.files))
        elif self.files is not None:
            built.update(_file_tools(self.files, names))
        return built

    def hooks(self, names: Sequence[str], session_id: str) -> list[Hook]:
        """Hooks an agent gets for its tools: the completion check of its todo list."""
        if "todo_write" not in names:
            return []
        return [CompletionCheckHook(self._todo_list(session_id))]

    def web_client(self) -> SafeHttpClient:
        """The one HTTP client of web tools, refusing private addresses unless ``[web]`` allows them."""
        if self._web_client is None:
            from nestor.tools.web.addresses import AddressPolicy
            from nestor.tools.web.client import SafeHttpClient

            web = self._settings.web
            self._web_client = SafeHttpClient(
                AddressPolicy(allow_hosts=web.allow_hosts, allow_networks=web.allow_ranges)
            )
        return self._web_client

    def _sandbox_notice(self, message: str) -> None:
        """Tell the user once per process what the shell sandbox cannot do here."""
        if not self._sandbox_notice_given:
            self._sandbox_notice_given = True
            self.notify(message)

    def _web_tools(self, tree: AgentTree, names: Sequence[str], session_id: str) -> dict[str, Tool[Any]]:
        """The tools that reach the web, all through one safe client, with per-session caches."""
        # Imported here: the HTML converter and the search engine cost start-up time.
        from nestor.tools.fetch import FetchTool
        from nestor.tools.web.cache import WebCache
        from nestor.tools.web_fetch import WebFetchTool
        from nestor.tools.web_search import SearchCache, WebSearchTool

        def pages() -> WebCache:  # the session's, made when a web tool first needs it
            return self._web_caches.setdefault(session_id, WebCache())

        tools: dict[str, Tool[Any]] = {}
        if "fetch" in names:
            tools["fetch"] = FetchTool(client=self.web_client, cache=pages)
        if "web_fetch" in names:
            tools["web_fetch"] = WebFetchTool(self.web_client, pages)
        if "web_search" in names:
            tools["web_search"] = WebSearchTool(
                self.search_backend,
                self._search_caches.setdefault(session_id, SearchCache()),
                default_results=self._settings.web.search_results,
            )
        if "agentic_fetch" in names:
            tools["agentic_fetch"] = AgenticFetchTool(
                tree, self._fetch_page, workspace_root=self._settings.data_dir / "fetch"
            )
        return tools

    async def _fetch_page(self, url: str) -> str:
        """A page as agentic_fetch hands it to its sub-agent: Markdown, JSON or text."""
        from nestor.tools.web.content import convert

        page = await self.web_client().get(url)
        return convert(page).text

    def _todo_list(self, session_id: str) -> TodoList:
        """The todo list of a session, read from its metadata once per process."""
        todos = self._todos.get(session_id)
        if todos is None:
            todos = todo_list_from_metadata(self._sessions.get(session_id).metadata)
            self._todos[session_id] = todos
        return todos


def _file_tools(files: EditorFiles, names: Sequence[str]) -> dict[str, Tool[Any]]:
    """``view``, ``edit`` and ``write`` through the editor's files."""
    from nestor.tools.edit import EditTool
    from nestor.tools.view import ViewTool
    from nestor.tools.write import WriteTool

    makers: dict[str, Callable[[], Tool[Any]]] = {
        "view": lambda: ViewTool(files),
        "edit": lambda: EditTool(files=files),
        "write": lambda: WriteTool(files=files),
    }
    return {name: makers[name]() for name in names if name in makers}


def _language_tools(lsp: LspManager, names: Sequence[str], files: EditorFiles | None) -> dict[str, Tool[Any]]:
    """The tools that use the project's language servers.

    The code-intelligence ones, and view, edit and write with diagnostics.
    """
    # Imported here: only a project with a language server pays for them.
    from nestor.tools.edit import EditTool
    from nestor.tools.lsp.definition import DefinitionTool
    from nestor.tools.lsp.diagnostics import DiagnosticsTool
    from nestor.tools.lsp.hover import HoverTool
    from nestor.tools.lsp.references import ReferencesTool
    from nestor.tools.lsp.symbols import SymbolsTool
    from nestor.tools.view import DiagnosingViewTool
    from nestor.tools.write import WriteTool

    makers: dict[str, Callable[[LspManager], Tool[Any]]] = {
        "view": lambda lsp: DiagnosingViewTool(lsp, files),
        "edit": lambda lsp: EditTool(lsp, files),
        "write": lambda lsp: WriteTool(lsp, files),
        "definition": DefinitionTool,
        "references": ReferencesTool,
        "hover": HoverTool,
        "symbols": SymbolsTool,
        "diagnostics": DiagnosticsTool,
    }
    return {name: makers[name](lsp) for name in names if name in makers}


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

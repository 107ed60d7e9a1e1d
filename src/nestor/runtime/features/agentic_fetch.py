"""The ``agentic_fetch`` tool: web research by a sub-agent confined to a temporary directory.

With a URL, the page is fetched first and handed to the sub-agent, inline below
:data:`INLINE_PAGE_CHARS` or saved to a file in its directory above. Without one, the sub-agent
searches. It runs as any sub-agent does (child session, cost roll-up, events, budgets) on the
``small`` model, with only ``web_search``, ``web_fetch`` and ``view``/``grep``/``glob`` over its
own temporary directory, auto-approved for the network and unable to write anything. The
directory is removed afterwards, also on cancel or error.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, Field

from nestor.agents.spec import AgentSpec
from nestor.core.errors import NestorError
from nestor.runtime.tree.delegation import AgentTree
from nestor.runtime.tree.services import TaskRequest
from nestor.tools.base import Tool, ToolContext, ToolError, ToolResult

INLINE_PAGE_CHARS = 50_000
"""A prefetched page up to this size goes into the sub-agent's prompt; a larger one into a file."""

RESEARCH_TOOLS = ("web_search", "web_fetch", "view", "grep", "glob")

PageFetcher = Callable[[str], Awaitable[str]]
"""Fetches a URL through the safe web client and returns it as Markdown or text."""


def research_spec() -> AgentSpec:
    """The agentic_fetch sub-agent: small model, web tools and its own directory, nothing else."""
    prompt = (
        resources.files("nestor.runtime.features")
        .joinpath("agentic_fetch_agent.md")
        .read_text(encoding="utf-8")
    )
    return AgentSpec(
        name="agentic_fetch",
        description="Researches a question on the web and answers with sources.",
        prompt=prompt,
        tools=RESEARCH_TOOLS,
        model="small",
        source="builtin",
    )


class AgenticFetchParams(BaseModel):
    """Parameters of ``agentic_fetch``."""

    prompt: str = Field(min_length=1, description="What to find out, and in what form to answer.")
    url: str | None = Field(default=None, description="A page to read first; omit it to search the web.")


class AgenticFetchTool(Tool[AgenticFetchParams]):
    """Delegates web research to a confined sub-agent (see ``agentic_fetch.md``)."""

    name: ClassVar[str] = "agentic_fetch"
    params_model: ClassVar[type[BaseModel]] = AgenticFetchParams

    def __init__(
        self, tree: AgentTree, fetch_page: PageFetcher, *, workspace_root: Path | None = None
    ) -> None:
        self.tree = tree
        self.fetch_page = fetch_page
        self.workspace_root = workspace_root

    async def run(self, params: AgenticFetchParams, ctx: ToolContext) -> ToolResult:
        """Prefetch the page if any, run the research sub-agent, remove its directory."""
        parent = self.tree.live.get(ctx.session_id)
        if parent is None:
            raise ToolError("this agent is not part of an agent tree; it cannot start a research agent")
        if self.workspace_root is not None:
            self.workspace_root.mkdir(parents=True, exist_ok=True)
        workspace = Path(tempfile.mkdtemp(prefix="nestor-fetch-", dir=self.workspace_root))
        try:
            prompt = await self._prompt(params, workspace)
            request = TaskRequest(
                description=_description(params),
                prompt=prompt,
                agent_type="agentic_fetch",
                spec=research_spec(),
                workspace=workspace,
            )
            result = await self.tree.run_task(parent, request, ctx.tool_call_id)
        except ToolError:
            raise
        except NestorError as exc:
            raise ToolError(str(exc)) from None
        finally:
            shutil.rmtree(workspace, ignore_errors=True)
        return result.tool_result()

    async def _prompt(self, params: AgenticFetchParams, workspace: Path) -> str:
        if params.url is None:
            return (
                f"{params.prompt}\n\nUse the web_search tool to find relevant information. Break the "
                "question into smaller searches if needed, fetch the most relevant pages with "
                "web_fetch (several at once when useful), and answer with a Sources section."
            )
        content = await self.fetch_page(params.url)
        if len(content) <= INLINE_PAGE_CHARS:
            page = f"<webpage_content>\n{content}\n</webpage_content>"
            return f"{params.prompt}\n\nWeb page URL: {params.url}\n\n{page}"
        saved = workspace / "page.md"
        saved.write_text(content, encoding="utf-8")
        return (
            f"{params.prompt}\n\nThe web page from {params.url} ({len(content)} characters) has been saved "
            f"to: {saved}\n\nUse grep and view on that file to find what the question needs."
        )


def _description(params: AgenticFetchParams) -> str:
    words = " ".join(params.prompt.split()[:5])
    return f"web: {words}"

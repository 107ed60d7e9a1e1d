"""``nestor mcp serve``: nestor's agents as MCP tools over stdio, for any MCP client to delegate to.

Each agent the ``task`` tool may start (explore, plan, general and every agent file) is a tool of
the same name taking a ``prompt`` (and an optional short ``description``). A call runs that agent
as a sub-agent of a main agent held for the server's life, exactly as a ``task`` call would: its
tools within the main agent's, its permissions never wider than the rules (nobody can be asked, so
what would ask is refused), its model the spec's or the main one. The result is the agent's final
report; a failed run is an error result carrying what it reported.

Only ``nestor mcp serve`` imports this module, so it imports the SDK at the top.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from nestor import __version__
from nestor.app.root import App
from nestor.config.settings import Settings
from nestor.core.errors import NestorError
from nestor.core.ids import new_id
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.tree.delegation import AgentTree
from nestor.runtime.tree.services import TaskRequest

_INSTRUCTIONS = (
    "nestor's agents: each tool runs one of them on this project as a sub-agent with its own tools "
    "and returns its final report. Give it a self-contained prompt: it sees nothing else."
)


def _stderr(message: str) -> None:
    print(f"nestor: {message}", file=sys.stderr, flush=True)


async def serve(settings: Settings, *, notify: Callable[[str], None] = _stderr) -> None:
    """Serve the project's agents over stdio until the client closes the connection.

    Raises:
        NestorError: No model can be built, or the session cannot be opened.

    """
    app = App.open(settings, notify=notify)
    try:
        main = await app.start_main_agent(title="nestor mcp serve")
        tree = app.tree
        assert tree is not None
        # WARNING: the SDK's INFO logging would print every model request on stderr.
        server = MCPServer("nestor", instructions=_INSTRUCTIONS, version=__version__, log_level="WARNING")
        for spec in app.agent_registry().delegable():
            server.add_tool(
                agent_tool(tree, main, spec.name), name=spec.name, description=spec.description or spec.name
            )
        await server.run_stdio_async()
    finally:
        await app.aclose()


def agent_tool(tree: AgentTree, main: SessionAgent, agent_type: str) -> Callable[..., Awaitable[str]]:
    """The tool function that runs ``agent_type`` on a prompt and returns its report."""

    async def run_agent(
        prompt: Annotated[str, Field(description="The task, with all the context the agent needs.")],
        description: Annotated[str, Field(description="A few words on the task, for the logs.")] = "",
    ) -> str:
        request = TaskRequest(
            description=description.strip() or agent_type, prompt=prompt, agent_type=agent_type
        )
        try:
            result = await tree.run_task(main, request, new_id("call"))
        except NestorError as exc:
            raise ToolError(str(exc)) from None
        if not result.success:
            raise ToolError(result.report())
        return result.summary

    return run_agent

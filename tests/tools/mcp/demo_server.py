"""A real MCP server for nestor's tests, written with the SDK: ``demo_server.py [--http|--sse PORT]``.

Its tools: ``echo`` (read-only), ``picture`` (an image), ``document`` (an embedded text resource),
``total`` (structured content), ``crash`` (the process dies mid-call), ``refuse`` (a JSON-RPC
error), ``hang`` (never answers), ``big`` (a large text), ``add_tool`` (a new tool appears, with
``tools/list_changed``), ``environment`` (its command line and environment, as JSON).
With ``--hang-at-start`` it never answers anything (a server stuck while starting). With
``DEMO_PID_FILE`` set, it writes its process id there.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, EmbeddedResource, ImageContent, TextResourceContents, ToolAnnotations

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()

app = MCPServer("demo")


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text, prefixed with 'echo:'."""
    print(f"echo called with {text!r}", file=sys.stderr, flush=True)
    return f"echo: {text}"


@app.tool()
def picture() -> list[ImageContent]:
    """Return a small PNG image."""
    return [ImageContent(type="image", data=PNG, mime_type="image/png")]


@app.tool()
def document() -> list[EmbeddedResource]:
    """Return an embedded text resource."""
    resource = TextResourceContents(uri="file:///notes.txt", text="the notes", mime_type="text/plain")
    return [EmbeddedResource(type="resource", resource=resource)]


@app.tool()
def total(numbers: list[int]) -> dict[str, int]:
    """Sum numbers, as structured content."""
    return {"sum": sum(numbers), "count": len(numbers)}


@app.tool()
def crash() -> str:
    """Kill the server process mid-call."""
    os._exit(3)


@app.tool()
def refuse() -> str:
    """Answer with a JSON-RPC error (the server itself is fine)."""
    raise MCPError(INVALID_PARAMS, "no such item")


@app.tool()
def hang() -> str:
    """Never return."""
    time.sleep(3600)
    return "unreachable"


@app.tool()
def big(lines: int) -> str:
    """Return many lines of text."""
    return "\n".join(f"line {number} of a long result" for number in range(lines))


@app.tool()
def environment() -> str:
    """Return the server's command line and environment, as JSON."""
    return json.dumps({"argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd()})


@app.tool()
async def add_tool(ctx: Context) -> str:
    """Add the tool 'extra' and say that the tool list changed."""

    @app.tool()
    def extra() -> str:
        """A tool added at run time."""
        return "extra!"

    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()
    return "added"


if __name__ == "__main__":
    if pid_file := os.environ.get("DEMO_PID_FILE"):  # tests check the process stops
        with open(pid_file, "w") as written:
            written.write(str(os.getpid()))
    if "--hang-at-start" in sys.argv:
        time.sleep(3600)
    elif "--http" in sys.argv:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    elif "--sse" in sys.argv:
        app.run("sse", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--sse") + 1]))
    else:
        app.run()

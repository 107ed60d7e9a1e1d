"""``nestor mcp add|list|get|remove|serve``: MCP servers, shaped like ``claude mcp``.

``add`` writes the user's ``config.toml`` (``--scope user``, the default) or the project's
``.mcp.json`` (``--scope project``: shared with the repository, applied only in a trusted folder).
``list`` and ``get`` start each server to show its status and tools; ``--json`` prints
``{"servers": [{"name", "transport", "target", "enabled", "status", "tools", "tool_names",
"error"}]}`` (``tools`` is the count).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from nestor.app.mcp_config import ServerState
    from nestor.cli.options import CommonOptions
    from nestor.config.settings import Settings

app = typer.Typer(
    help="Add, list, show and remove MCP servers; serve nestor's agents over MCP.", no_args_is_help=True
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
NameArgument = Annotated[str, typer.Argument(help="The server's name (its tools are mcp__NAME__TOOL).")]


class Scope(StrEnum):
    """Where ``add`` writes the server."""

    user = "user"
    project = "project"


class Transport(StrEnum):
    """How nestor talks to the server."""

    stdio = "stdio"
    http = "http"
    sse = "sse"


def _options(ctx: typer.Context) -> CommonOptions:
    from nestor.cli.options import CommonOptions

    return ctx.obj if isinstance(ctx.obj, CommonOptions) else CommonOptions()


@app.command("add")
def add(
    ctx: typer.Context,
    name: NameArgument,
    target: Annotated[
        list[str], typer.Argument(help="stdio: -- COMMAND ARGS...; http or sse: the URL.", show_default=False)
    ],
    scope: Annotated[
        Scope, typer.Option("--scope", "-s", help="user: your config.toml; project: .mcp.json.")
    ] = (Scope.user),
    transport: Annotated[
        Transport, typer.Option("--transport", "-t", help="stdio, http or sse.")
    ] = Transport.stdio,
    env: Annotated[
        list[str] | None, typer.Option("--env", "-e", help="K=V for the server's environment.")
    ] = None,
    header: Annotated[
        list[str] | None, typer.Option("--header", "-H", help="'Name: value' (http, sse).")
    ] = None,
) -> None:
    """Add a server: nestor mcp add NAME -- COMMAND ARGS, or nestor mcp add --transport http NAME URL."""
    from nestor.app.mcp_config import McpServerConfig, add_server
    from nestor.core.errors import ConfigError

    options = _options(ctx)
    table: dict[str, Any] = {"env": _pairs(env or [], "=", "--env", "K=V")}
    if transport == Transport.stdio:
        table |= {"command": target[0], "args": tuple(target[1:])}
    elif len(target) != 1:
        raise ConfigError(
            f"--transport {transport.value} takes one URL, got {len(target)} arguments", hint=add.__doc__
        )
    else:
        table |= {
            "url": target[0],
            "transport": transport.value,
            "headers": _pairs(header or [], ":", "--header", "Name: value"),
        }
    try:
        config = McpServerConfig.model_validate(table)
    except ValueError as exc:
        cause = str(exc).splitlines()[-1].strip().removeprefix("Value error, ")
        raise ConfigError(f"MCP server {name!r}: {cause}", hint=add.__doc__) from None
    path = add_server(name, config, scope=scope.value, project_root=options.project_root, env=os.environ)
    print(f"added MCP server {name} to {path}")
    if scope == Scope.project:
        print(
            f"it applies once you trust {options.project_root} (nestor trust), "
            "as every project setting that widens what nestor does"
        )


@app.command("list")
def list_servers(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the configured servers, each started to show its status and its number of tools."""
    settings = _options(ctx).load_settings()
    ignored = [item.key for item in settings.ignored if item.reason == "untrusted" and "mcp" in item.key]
    if ignored:
        print(
            f"nestor: this folder is not trusted, so {', '.join(ignored)} were ignored; "
            "run `nestor trust` or pass --trust if you trust it",
            file=sys.stderr,
        )
    states = _states(settings, None)
    if as_json:
        print(json.dumps({"servers": [_state_dict(settings, state) for state in states]}, indent=2))
        return
    if not states:
        print("no MCP servers; add one with nestor mcp add NAME -- COMMAND ARGS")
    for state in states:
        problem = f"  ({state.error})" if state.error else ""
        tools = len(state.tools)
        print(f"{state.name}: {state.target} [{state.transport}] {state.status}, {tools} tools{problem}")


@app.command("get")
def get(ctx: typer.Context, name: NameArgument, as_json: JsonOption = False) -> None:
    """Show one server: how it is reached, its status and its tools."""
    settings = _options(ctx).load_settings()
    (state,) = _states(settings, [name])
    document = _state_dict(settings, state)
    if as_json:
        print(json.dumps(document, indent=2))
        return
    for key in ("name", "transport", "target", "enabled", "status", "error"):
        if document[key] not in ("", None):
            print(f"{key}: {document[key]}")
    print("tools:" + "".join(f"\n  {tool}" for tool in state.tools) if state.tools else "tools: none")


@app.command("remove")
def remove(ctx: typer.Context, name: NameArgument) -> None:
    """Remove a server from your config.toml, the project's .mcp.json and its nestor.toml."""
    from nestor.app.mcp_config import remove_server

    for path in remove_server(name, project_root=_options(ctx).project_root, env=os.environ):
        print(f"removed MCP server {name} from {path}")


@app.command("serve")
def serve(ctx: typer.Context) -> None:
    """Serve nestor's agents (explore, plan, general, agent files) over stdio as MCP tools.

    Each tool runs its agent on this project as a sub-agent and returns its final report; nobody
    can be asked, so what the permission rules would ask about is refused (allow rules or --yolo
    widen that). Point an MCP client at: nestor mcp serve (with -C DIR for another project).
    """
    from nestor.app.mcp_serve import serve as serve_agents

    asyncio.run(serve_agents(_options(ctx).load_settings()))


def _states(settings: Settings, names: list[str] | None) -> list[ServerState]:
    from nestor.app.mcp_config import server_states

    return asyncio.run(server_states(settings, names))


def _state_dict(settings: Settings, state: ServerState) -> dict[str, Any]:
    return {
        "name": state.name,
        "transport": state.transport,
        "target": state.target,
        "enabled": settings.mcp_servers[state.name].enabled,
        "status": state.status,
        "tools": len(state.tools),
        "tool_names": list(state.tools),
        "error": state.error,
    }


def _pairs(items: list[str], separator: str, flag: str, shape: str) -> dict[str, str]:
    from nestor.core.errors import ConfigError

    pairs: dict[str, str] = {}
    for item in items:
        key, found, value = item.partition(separator)
        if not found or not key.strip():
            raise ConfigError(f"{flag} {item!r} is not {shape}", hint=f"write {flag} '{shape}'")
        pairs[key.strip()] = value.strip()
    return pairs

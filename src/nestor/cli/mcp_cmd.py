"""``nestor mcp add|list|get|remove|approve|serve``: MCP servers, shaped like ``claude mcp``.

``add`` writes the user's ``config.toml`` (``--scope user``, the default) or the project's
``.mcp.json`` (``--scope project``: shared with the repository, applied only in a trusted folder).
``list`` and ``get`` start each server to show its status and tools, but a project's server only
once approved; ``--json`` prints ``{"servers": [{"name", "origin", "transport", "target",
"enabled", "status", "approved", "tools", "tool_names", "error"}]}`` (``tools`` is the count,
``approved`` null for the user's own servers). ``approve`` shows a project server's definition
and records the user's approval of it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from nestor.app.mcp_approvals import ProjectServer
    from nestor.app.mcp_config import ServerState
    from nestor.cli.options import CommonOptions
    from nestor.config.settings import Settings

app = typer.Typer(
    help="Add, list, show, remove and approve MCP servers; serve nestor's agents over MCP.",
    no_args_is_help=True,
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
            f"as every project setting that widens what nestor does, and starts once approved "
            f"(nestor mcp approve {name})"
        )


@app.command("list")
def list_servers(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the servers (configured, and a project's agent files' own), each started to show its status.

    A project's server starts only once you approved its definition (nestor mcp approve NAME).
    """
    from nestor.app.notices import ignored_settings_notices

    settings = _options(ctx).load_settings()
    about_mcp = tuple(item for item in settings.ignored if "mcp" in item.key or item.reason == "variable")
    for line in ignored_settings_notices(settings.model_copy(update={"ignored": about_mcp}), []):
        print(f"nestor: {line}", file=sys.stderr)
    states = _states(settings, None)
    if as_json:
        print(json.dumps({"servers": [_state_dict(state) for state in states]}, indent=2))
        return
    if not states:
        print("no MCP servers; add one with nestor mcp add NAME -- COMMAND ARGS")
    for state in states:
        problem = f"  ({state.error})" if state.error else ""
        origin = f" ({state.project.origin})" if state.project else ""
        tools = len(state.tools)
        print(
            f"{state.name}{origin}: {state.target} [{state.transport}] {state.status}, {tools} tools{problem}"
        )
        if state.approved is False:
            print(f"  not approved: nestor mcp approve {state.name} shows its definition and approves it")


@app.command("get")
def get(ctx: typer.Context, name: NameArgument, as_json: JsonOption = False) -> None:
    """Show a server: how it is reached, where it is defined, whether it is approved, its status and tools."""
    settings = _options(ctx).load_settings()
    states = _states(settings, [name])
    if as_json:
        documents = [_state_dict(state) for state in states]
        print(json.dumps(documents[0] if len(documents) == 1 else {"servers": documents}, indent=2))
        return
    for number, state in enumerate(states):
        document = _state_dict(state)
        if number:
            print()
        for key in ("name", "origin", "transport", "target", "enabled", "status", "approved", "error"):
            if document[key] not in ("", None):
                print(f"{key}: {document[key]}")
        if state.project is not None:
            print(f"definition: {state.project.definition}")
        print("tools:" + "".join(f"\n  {tool}" for tool in state.tools) if state.tools else "tools: none")


@app.command("approve")
def approve(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(help="The project's server to approve (each one of that name).")
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="Approve every project server not yet approved.")
    ] = False,
) -> None:
    """Show a project's MCP server definition and approve it, so that it may start.

    A project's servers (its .mcp.json, nestor.toml [mcp_servers] and agent files' own) start only
    once you approved their exact definition; a changed definition needs approving again. Trusting
    the folder (nestor trust, --trust) approves none. The REPL and the TUI ask; nestor run and
    nestor mcp serve skip a server not approved.
    """
    from nestor.app.mcp_approvals import approve_servers, pending_servers, project_servers
    from nestor.core.errors import NestorError, UsageError

    if (name is not None) == every:
        raise UsageError(
            "nestor mcp approve takes a server's NAME or --all", hint="nestor mcp list shows them"
        )
    settings = _options(ctx).load_settings()
    servers = [server for server in project_servers(settings) if every or server.name == name]
    if name is not None and not servers:
        if name in settings.mcp_servers:
            print(f"MCP server {name} is your own (your config), which needs no approval")
            return
        untrusted = "" if settings.project_trusted else " (this folder is not trusted: nestor trust first)"
        raise NestorError(
            f"this project defines no MCP server named {name!r}{untrusted}", hint="nestor mcp list shows them"
        )
    pending = pending_servers(settings, servers)
    approve_servers(settings, [server for server, _state in pending])
    for server, state in pending:
        was = {"changed": ", its definition changed since you approved it", "declined": ", declined before"}
        print(f"approved MCP server {server.name} (defined by {server.origin}{was.get(state, '')}):")
        print("  " + json.dumps(json.loads(server.definition), indent=2).replace("\n", "\n  "))
    waiting = {server for server, _state in pending}
    for server in servers:
        if server not in waiting:
            print(f"MCP server {server.name} ({server.origin}) was approved already")
    if not servers:
        print("this project defines no MCP server")


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


def ask_to_approve_servers(settings: Settings, ask: Callable[[str], str]) -> None:
    """Before the REPL or the TUI starts: ask about each project server not approved that would start.

    These are the enabled servers of the project's config, which start with the main agent,
    before the UI could ask (its agent files' own are asked about when a sub-agent starts them).
    A yes is stored; a no is stored too (not asked again until the definition changes), and a
    server declined does not start, which the run says.

    Raises:
        StoreError: The database, where approvals are, fails.

    """
    from nestor.app.mcp_approvals import approval_request, approve_servers, decline_servers, pending_servers

    configured = settings.project_mcp_servers
    servers = [server for name, server in configured.items() if settings.mcp_servers[name].enabled]
    approved: list[ProjectServer] = []
    declined: list[ProjectServer] = []
    for server, state in pending_servers(settings, servers) if servers else ():
        if state == "declined":
            continue
        request = approval_request(server, state)
        question = f"{request.description}?\n  {request.target}\nStart it, now and while it stays so? [y/N] "
        (approved if answered_yes(ask, question) else declined).append(server)
    if approved:
        approve_servers(settings, approved)
    if declined:
        decline_servers(settings, declined)


def answered_yes(ask: Callable[[str], str], question: str) -> bool:
    """Whether the user answers ``question`` yes; no answer (end of input) is a no."""
    try:
        answer = ask(question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _states(settings: Settings, names: list[str] | None) -> list[ServerState]:
    from nestor.app.mcp_config import server_states

    return asyncio.run(server_states(settings, names))


def _state_dict(state: ServerState) -> dict[str, Any]:
    return {
        "name": state.name,
        "origin": state.project.origin if state.project else "user config",
        "transport": state.transport,
        "target": state.target,
        "enabled": state.status != "disabled",
        "status": state.status,
        "approved": state.approved,
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

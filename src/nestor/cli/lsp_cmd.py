"""``nestor lsp list``: the language servers nestor detects and the ones configured, and their state."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from nestor.app.lsp_info import ServerStatus
    from nestor.cli.options import CommonOptions

app = typer.Typer(help="Language servers: which ones nestor finds, and their state.", no_args_is_help=True)


@app.command("list")
def list_servers(
    ctx: typer.Context,
    check: Annotated[
        bool,
        typer.Option("--check", help="Start the project's servers to see that they answer (then stop them)."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the known and configured language servers and their state for this project.

    A server is found on PATH (pyright, basedpyright, pylsp, gopls, rust-analyzer,
    typescript-language-server, clangd) or configured with [lsp.NAME] in config.toml or a trusted
    nestor.toml; none runs in a folder that is not trusted.
    """
    from nestor.app.lsp_info import server_statuses
    from nestor.cli.options import CommonOptions

    options: CommonOptions = ctx.obj if isinstance(ctx.obj, CommonOptions) else CommonOptions()
    statuses = server_statuses(options.load_settings(), check=check)
    if as_json:
        print(json.dumps([asdict(status) for status in statuses], indent=2))
        return
    for line in status_lines(statuses):
        print(line)


def status_lines(statuses: list[ServerStatus]) -> list[str]:
    """One line per server (name, language, state, command), its detail below when it has one."""
    lines = [f"{'server':<28} {'language':<12} {'state':<11} command"]
    for status in statuses:
        command = status.command if status.state not in ("not found",) else ""
        lines.append(f"{status.name:<28} {status.language:<12} {status.state:<11} {command}".rstrip())
        if status.detail:
            lines.append(f"  {status.detail}")
    return lines

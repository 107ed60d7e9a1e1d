"""The Typer application: ``nestor``, ``run``, ``acp``, ``models``, ``sessions``, ``agents``, ``lsp``."""

from __future__ import annotations

import functools
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nestor.cli import agents_cmd, batch_cmd, hooks_cmd, lsp_cmd, mcp_cmd, sessions_cmd
from nestor.cli.options import CommonOptions
from nestor.core.errors import NestorError

if TYPE_CHECKING:
    from typer._click.core import Command  # Typer vendors Click and exports no name for it

app = typer.Typer(
    name="nestor",
    help="nestor: a terminal AI coding assistant built around a tree of agents.\n\n"
    "With no command, opens the interactive terminal UI on the current directory (the line REPL "
    "with --plain, or when stdin or stdout is not a terminal).",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(sessions_cmd.app, name="sessions")
app.add_typer(agents_cmd.app, name="agents")
app.add_typer(mcp_cmd.app, name="mcp")
app.add_typer(lsp_cmd.app, name="lsp")
app.add_typer(hooks_cmd.app, name="hooks")
app.add_typer(batch_cmd.app, name="batch")


class OutputFormat(StrEnum):
    """How ``nestor run`` prints its outcome."""

    text = "text"
    json = "json"
    stream_json = "stream-json"


ModelOption = Annotated[
    str | None, typer.Option("--model", "-m", help="Model of the large role (main agent), as provider:model.")
]
SmallModelOption = Annotated[
    str | None,
    typer.Option("--small-model", help="Model of the small role (titles, research), as provider:model."),
]
YoloOption = Annotated[
    bool,
    typer.Option(
        "--yolo",
        help="Allow every tool call without asking, except what deny rules forbid and ask rules ask.",
    ),
]
TrustOption = Annotated[
    bool,
    typer.Option(
        "--trust",
        help="Apply this project's own settings for this run (allow rules, providers, ...), as a "
        "trusted folder's are; without it they apply only once you run `nestor trust`. Its MCP "
        "servers still start only once approved (nestor mcp approve).",
    ),
]
DebugOption = Annotated[bool, typer.Option("--debug", help="Show tracebacks of unexpected errors.")]
DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        "-C",
        exists=True,
        file_okay=False,
        help="Project directory (default: the current directory).",
    ),
]
ContinueOption = Annotated[
    bool, typer.Option("--continue", "-c", help="Continue this project's latest session.")
]
ResumeOption = Annotated[str | None, typer.Option("--resume", "-r", help="Resume the session with this id.")]
PlainOption = Annotated[
    bool,
    typer.Option(
        "--plain", help="Use the line REPL instead of the full-screen UI (also when not on a terminal)."
    ),
]


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    model: ModelOption = None,
    small_model: SmallModelOption = None,
    yolo: YoloOption = False,
    trust: TrustOption = False,
    debug: DebugOption = False,
    directory: DirOption = None,
    continue_latest: ContinueOption = False,
    resume: ResumeOption = None,
    plain: PlainOption = False,
) -> None:
    """With no command: the full-screen UI on a terminal, else (or with --plain) the line REPL."""
    ctx.obj = CommonOptions(
        model=model, small_model=small_model, yolo=yolo, trust=trust, debug=debug, directory=directory
    )
    if ctx.invoked_subcommand is not None:
        return
    if plain or not (sys.stdin.isatty() and sys.stdout.isatty()):
        from nestor.cli.repl import run_repl

        raise typer.Exit(run_repl(ctx.obj, resume=resume, continue_latest=continue_latest))
    from nestor.cli.tui import run_tui

    raise typer.Exit(run_tui(ctx.obj, resume=resume, continue_latest=continue_latest))


@app.command()
def run(
    ctx: typer.Context,
    prompt: Annotated[str | None, typer.Argument(help="The prompt; read from stdin when omitted.")] = None,
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--output-format",
            "-o",
            help="text: the answer; json: one object with session_id, result, usage, cost_usd...; "
            "stream-json: one event per line as it happens.",
        ),
    ] = OutputFormat.text,
    model: ModelOption = None,
    small_model: SmallModelOption = None,
    yolo: YoloOption = False,
    trust: TrustOption = False,
    debug: DebugOption = False,
    directory: DirOption = None,
    continue_latest: ContinueOption = False,
    resume: ResumeOption = None,
    max_iterations: Annotated[
        int | None,
        typer.Option(min=1, help="Most model requests in this run, main agent and sub-agents together."),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            min=0, help="Most tokens (input + output) in this run, sub-agents included; 0: no limit."
        ),
    ] = None,
    max_time: Annotated[
        float | None,
        typer.Option(min=0, help="Most seconds of wall time for this run, sub-agents included; 0: no limit."),
    ] = None,
    fork_session: Annotated[
        bool,
        typer.Option(
            "--fork-session",
            help="With --resume or --continue: run on a copy of the session (a fork), leaving it as it is.",
        ),
    ] = False,
) -> None:
    """Run one prompt to completion without asking anything, and print the answer.

    Tool calls that would ask for permission are denied (the model is told why) unless a rule in
    nestor.toml allows them or --yolo is given; --yolo does not override deny or ask rules. The
    budgets bound the whole run, sub-agents (background ones too) included; a stopped agent gets
    one last turn without tools to report. Exit codes: 0 done, 1 error, 2 usage error, 3 stopped
    by a budget, the time limit or a hook, 4 the model refused (stop_reason "refusal"), 130 cancelled by
    Ctrl-C (129 by a closed terminal, 143 by kill: 128 + the signal's number; the turn is stored
    and running commands are killed).
    """
    from nestor.cli.headless import run_headless

    common = CommonOptions.merge(
        ctx.obj,
        model=model,
        small_model=small_model,
        yolo=yolo,
        trust=trust,
        debug=debug,
        directory=directory,
        max_iterations=max_iterations,
        max_tokens=max_tokens,
        max_time_s=max_time,
    )
    if fork_session and not (resume or continue_latest):
        raise NestorError("--fork-session needs the session to fork", hint="add --resume ID or --continue")
    text = prompt if prompt is not None else _read_stdin_prompt()
    raise typer.Exit(
        run_headless(
            common,
            text,
            output_format=output_format.value,
            resume=resume,
            continue_latest=continue_latest,
            fork=fork_session,
        )
    )


@app.command()
def undo(
    ctx: typer.Context,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="The session (default: this project's latest).")
    ] = None,
    to: Annotated[
        int | None,
        typer.Option(
            "--to",
            min=1,
            metavar="PROMPT_N",
            help="Go back to before prompt N (sessions show lists them); default: the last prompt "
            "whose changes are not undone.",
        ),
    ] = None,
    code_only: Annotated[
        bool, typer.Option("--code-only", help="Put the files back, keep the conversation.")
    ] = False,
    conversation_only: Annotated[
        bool, typer.Option("--conversation-only", help="Cut the conversation back, leave the files.")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the files it would restore or delete, with diffs; change nothing."
        ),
    ] = False,
    directory: DirOption = None,
    trust: TrustOption = False,
) -> None:
    """Undo a prompt's changes and every later prompt's: the files the agents changed, and the conversation.

    The files changed by any agent of the session's tree, bash commands included, go back to what
    they held before the first change to them, all or none: a restore that cannot be done in full
    changes nothing. Files changed outside nestor are left alone; the conversation cut back is
    kept whole in a new session first (its id is printed).
    """
    from nestor.cli.undo_cmd import run_undo

    if code_only and conversation_only:
        raise NestorError(
            "--code-only and --conversation-only exclude each other",
            hint="give one of them, or neither for both",
        )
    common = CommonOptions.merge(ctx.obj, directory=directory, trust=trust)
    raise typer.Exit(
        run_undo(
            common,
            session_id=session,
            to=to,
            code=not conversation_only,
            conversation=not code_only,
            dry_run=dry_run,
        )
    )


@app.command()
def models(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the configured model roles and whether their providers have credentials."""
    from nestor.cli.models_cmd import show_models

    show_models(ctx.obj, as_json=as_json)


@app.command()
def acp(
    ctx: typer.Context,
    model: ModelOption = None,
    small_model: SmallModelOption = None,
    yolo: YoloOption = False,
    trust: TrustOption = False,
    debug: DebugOption = False,
) -> None:
    """Serve nestor to an editor over the Agent Client Protocol (ACP) on stdin and stdout.

    The editor starts this command and drives sessions in the folders it opens: prompts (text,
    images, the files the editor attaches), tool calls with their diffs, permission questions
    (answered in the editor; --yolo starts sessions in the yolo mode, where deny and ask rules
    still hold), and the agent tree (sub-agents show inside their task calls). A trusted project's
    hooks not yet approved are asked about, yes or no, before a session's first prompt. See the
    README's "Editors" section for each editor's settings.
    """
    from nestor.cli.acp.server import run_acp

    common = CommonOptions.merge(
        ctx.obj, model=model, small_model=small_model, yolo=yolo, trust=trust, debug=debug
    )
    raise typer.Exit(run_acp(common))


@app.command()
def trust(
    ctx: typer.Context,
    path: Annotated[
        Path | None, typer.Argument(help="The folder to trust (default: the project directory).")
    ] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Stop trusting the folder.")] = False,
    list_folders: Annotated[bool, typer.Option("--list", help="List the trusted folders.")] = False,
) -> None:
    """Trust a folder: its nestor.toml and agent files then apply in full.

    A repository's settings are a stranger's input: until you trust its folder, nestor ignores
    those that would widen what it may do or where your data goes (allow rules, providers, models,
    web allow lists, budgets, sandbox relaxations). Folders inside a trusted one are trusted too.
    A project's MCP servers also need their definition approved (nestor mcp approve): trust does
    not approve them.
    """
    from nestor.cli.trust_cmd import run_trust

    run_trust(ctx.obj or CommonOptions(), path, remove=remove, list_folders=list_folders)


def _read_stdin_prompt() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise NestorError(
            "no prompt given", hint='pass one: nestor run "what does this project do?" (or pipe it on stdin)'
        )
    text = sys.stdin.read().strip()
    if not text:
        raise NestorError("the prompt read from stdin is empty", hint='pass one: nestor run "your prompt"')
    return text


@functools.cache
def click_command() -> Command:
    """The Click command Typer makes of :data:`app`, made once per process (0.1 s here)."""
    return typer.main.get_command(app)


def run_app(args: list[str]) -> int:
    """Run the Typer app on ``args`` and return its exit code (errors propagate to the caller).

    Raises:
        UsageError: ``args`` name no such command or flag, lack an argument, or a value does not parse.

    """
    from typer._click.exceptions import NoArgsIsHelpError  # Typer vendors Click and exports no name for it

    try:
        result = click_command().main(args=args, prog_name="nestor", standalone_mode=False)
    except typer.Exit as done:
        return done.exit_code
    except typer.Abort:
        print("\naborted", file=sys.stderr)
        return 130
    except NoArgsIsHelpError as bare_group:  # `nestor sessions`: its help, and a usage error's code
        bare_group.show()
        return bare_group.exit_code
    except typer.TyperException as mistake:
        # Typer vendors Click: its parse errors are TyperExceptions, not click.ClickException.
        from nestor.cli.usage import usage_error

        raise usage_error(mistake) from mistake
    return result if isinstance(result, int) else 0

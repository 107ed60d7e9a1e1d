"""``nestor sessions list|show|export|import|delete``: stored conversations, as tables or JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nestor.app.session_files import export_json, session_to_dict

if TYPE_CHECKING:
    from nestor.app.records import Database, MessageRecord, MessageStore, Session, SessionStore, StoredRow
    from nestor.cli.options import CommonOptions
    from nestor.cli.tree_view import AgentNode

app = typer.Typer(help="List, show, export, import, fork and delete stored sessions.", no_args_is_help=True)


@dataclass(frozen=True)
class Stores:
    """The session database's two stores."""

    sessions: SessionStore
    messages: MessageStore
    database: Database


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _options(ctx: typer.Context) -> CommonOptions:
    from nestor.cli.options import CommonOptions

    return ctx.obj if isinstance(ctx.obj, CommonOptions) else CommonOptions()


@contextmanager
def _stores(ctx: typer.Context) -> Iterator[Stores]:
    """The session database's stores, without the rest of the app (the model layer costs start-up time)."""
    from nestor.app.records import MessageStore, SessionStore, open_database

    database = open_database(_options(ctx).load_settings().database_path)
    try:
        yield Stores(SessionStore(database), MessageStore(database), database)
    finally:
        database.close()


def _load(ctx: typer.Context, session_id: str) -> tuple[Session, list[MessageRecord]]:
    """Read one session (by id or unique prefix) and its messages."""
    with _stores(ctx) as stores:
        session = stores.sessions.get(session_id)
        return session, stores.messages.list_records(session.id)


@app.command("list")
def list_sessions(
    ctx: typer.Context,
    as_json: JsonOption = False,
    all_projects: Annotated[bool, typer.Option("--all", "-a", help="Sessions of every project.")] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many sessions.")] = 50,
) -> None:
    """List this project's sessions, newest first."""
    with _stores(ctx) as stores:
        project = None if all_projects else str(_options(ctx).project_root)
        sessions = stores.sessions.list(project, limit=limit)
    if as_json:
        print(json.dumps([session_to_dict(s) for s in sessions], indent=2))
        return
    if not sessions:
        print("No sessions yet in this project." + ("" if all_projects else " (--all shows every project)"))
        return
    from rich.console import Console
    from rich.table import Table

    from nestor.core.usage import format_cost, format_tokens

    columns = ("id", "updated", "title", "model", "status", "tokens", "cost")
    rows = [
        (
            session.id,
            _when(session.updated_at),
            session.title or "(untitled)",
            session.model,
            session.status,
            format_tokens(session.usage.total_tokens),
            format_cost(session.usage.cost_usd),
        )
        for session in sessions
    ]
    if not sys.stdout.isatty():
        # Piped: whole values, tab-separated, for grep and cut; a table would be cut to 80 columns.
        for row in (columns, *rows):
            print("\t".join(row))
        return
    table = Table(box=None, pad_edge=False)
    for column in columns:
        table.add_column(column, no_wrap=column != "title")
    for row in rows:
        table.add_row(*row)
    Console().print(table)


@app.command("show")
def show_session(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="A session id (a unique prefix is enough).")],
    as_json: JsonOption = False,
    tree: Annotated[
        bool, typer.Option("--tree", help="The session and all its sub-agent sessions, as a tree.")
    ] = False,
) -> None:
    """Show a session: its totals and every stored message (or, with --tree, its sub-agents)."""
    if tree:
        root = _load_tree(ctx, session_id)
        if as_json:
            print(json.dumps(tree_to_dict(root), indent=2))
        else:
            from nestor.cli.tree_view import tree_lines

            print("\n".join(tree_lines(root)))
        return
    if as_json:
        print(export_json(*_load_rows(ctx, session_id)))
        return
    from nestor.cli.tree_view import count_descendants

    with _stores(ctx) as stores:
        session = stores.sessions.get(session_id)
        records = stores.messages.list_records(session.id)
        descendants = count_descendants(stores.sessions, session.id)
        checkpoints = _checkpoint_lines(stores, session.id)
    print(render_transcript(session, records))
    if checkpoints:
        print("\n".join(checkpoints))
    note = _relatives_note(session, descendants)
    if note:
        print(note)


def _checkpoint_lines(stores: Stores, session_id: str) -> list[str]:
    from nestor.app.checkpoints import SessionCheckpoints
    from nestor.cli.undo_cmd import checkpoint_lines

    return checkpoint_lines(SessionCheckpoints(None, stores.database, session_id))


def _load_rows(ctx: typer.Context, session_id: str) -> tuple[Session, list[StoredRow]]:
    """Read one session (by id or unique prefix) and its messages as stored, without decoding them."""
    with _stores(ctx) as stores:
        session = stores.sessions.get(session_id)
        return session, stores.messages.export_rows(session.id)


def _load_tree(ctx: typer.Context, session_id: str) -> AgentNode:
    """Read a session (by id or unique prefix) and all its descendants."""
    from nestor.cli.tree_view import load_tree

    with _stores(ctx) as stores:
        return load_tree(stores.sessions, stores.messages, stores.sessions.get(session_id))


def _relatives_note(session: Session, descendants: int) -> str:
    """One line naming a session's parent and counting its sub-agent sessions; empty if it has neither."""
    from nestor.cli.formatting import counted

    notes: list[str] = []
    if session.parent_id:
        notes.append(f"sub-agent session of {session.parent_id}")
    if descendants:
        notes.append(f"{counted(descendants, 'sub-agent session')}; --tree shows them")
    return "; ".join(notes)


@app.command("export")
def export_session(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="A session id (a unique prefix is enough).")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file.")] = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="A readable transcript instead of JSON.")
    ] = False,
    tree: Annotated[
        bool,
        typer.Option(
            "--tree", help="JSON with every sub-agent session below it, for `nestor sessions import`."
        ),
    ] = False,
) -> None:
    """Export a session with every message, as JSON (default) or Markdown."""
    if markdown:
        session, records = _load(ctx, session_id)
        text = render_transcript(session, records)
    elif tree:
        from nestor.app.session_files import export_tree_json

        with _stores(ctx) as stores:
            session = stores.sessions.get(session_id)
            text = export_tree_json(stores.database, stores.sessions, session.id)
    else:
        session, rows = _load_rows(ctx, session_id)
        text = export_json(session, rows)
    if output is None:
        print(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")
        print(f"exported {session.id} to {output}", file=sys.stderr)


@app.command("import")
def import_session(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A file written by `nestor sessions export` (--tree or not).")],
) -> None:
    """Import an exported session (and its sub-agent sessions) into this store, under the same ids.

    For a session run on another machine: `nestor sessions show ID --tree` then works on it.
    """
    from nestor.app.session_files import import_json
    from nestor.core.errors import NestorError

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise NestorError(
            f"cannot read {file}: {error}", hint="give an exported session's JSON file"
        ) from None
    with _stores(ctx) as stores:
        session_id = import_json(stores.database, text, str(file))
    print(f"imported {session_id}")


@app.command("delete")
def delete_session(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="A session id (a unique prefix is enough).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a session, its messages, its sub-agent sessions and the snapshots only it needed."""
    import asyncio

    from nestor.app import App
    from nestor.app.checkpoints import prune_after_delete
    from nestor.core.errors import NestorError

    application = App.open(_options(ctx).load_settings())
    try:
        session = application.sessions.get(session_id)
        if not yes:
            if not sys.stdin.isatty():
                raise NestorError(
                    f"refusing to delete {session.id} without confirmation", hint="add --yes to delete it"
                )
            if not typer.confirm(f"Delete session {session.id} ({session.title or 'untitled'})?"):
                raise typer.Exit(1)
        application.delete_session(session.id)
        asyncio.run(prune_after_delete(application.settings, application.database, session.project_path))
    finally:
        application.close()
    print(f"deleted {session.id}")


@app.command("fork")
def fork_session(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="A main session's id (a unique prefix is enough).")],
    at: Annotated[
        int | None,
        typer.Option(
            "--at",
            min=0,
            metavar="MESSAGE",
            help="Keep the messages before this one (its seq in sessions show --json); default: all.",
        ),
    ] = None,
) -> None:
    """Copy a session and its sub-agents' sessions into a new one (its id is printed); the original stays."""
    from nestor.cli.undo_cmd import run_fork

    run_fork(_options(ctx), session_id, at)


def tree_to_dict(node: AgentNode) -> dict[str, Any]:
    """The JSON form of a session tree: each session's row, its run and its children, nested.

    ``usage``/``cost_usd`` include the descendants (as stored); ``own_usage`` is the session's own.
    """
    return {
        **session_to_dict(node.session),
        "outcome": node.outcome,
        "tools_used": node.tools_used,
        "tool_calls": sum(node.tools_used.values()),
        "duration_s": round(node.duration_s, 3),
        "own_usage": node.own_usage.to_dict(),
        "children": [tree_to_dict(child) for child in node.children],
    }


def render_transcript(session: Session, records: list[MessageRecord]) -> str:
    """A readable Markdown transcript of a session."""
    from pydantic_ai.messages import (
        ModelRequest,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from nestor.app.records import compaction_mark
    from nestor.cli.render import counted
    from nestor.core.prompts import prompt_text
    from nestor.core.usage import format_cost, format_tokens

    usage = session.usage
    lines = [
        f"# {session.title or 'Untitled session'}",
        "",
        f"- id: {session.id}",
        f"- project: {session.project_path}",
        f"- agent: {session.agent_name}, model: {session.model}, status: {session.status}",
        f"- tokens: {format_tokens(usage.input_tokens)} in, {format_tokens(usage.output_tokens)} out, "
        f"{counted(usage.requests, 'request')}, {format_cost(usage.cost_usd)}",
        f"- created {_when(session.created_at)}, updated {_when(session.updated_at)}",
        "",
    ]
    for record in records:
        message = record.message
        mark = compaction_mark(message)
        if mark is not None:
            cost = f", {format_tokens(record.usage.total_tokens)} tokens" if record.usage else ""
            summarised = counted(mark.summarized_messages, "message")
            lines += [
                f"## context compacted ({mark.trigger}: {summarised} summarised at "
                f"{format_tokens(mark.tokens_before)} tokens, the last {mark.kept_messages} kept{cost})",
                "",
                *(str(part.content) for part in message.parts if isinstance(part, UserPromptPart)),
                "",
            ]
        elif isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    lines += ["## user", "", prompt_text(part.content, name_files=True), ""]
                elif isinstance(part, ToolReturnPart):
                    content = str(part.content)
                    if len(content) > 2000:
                        content = content[:2000] + f"\n[... {len(content) - 2000} more characters]"
                    lines += [
                        f"### result of {part.tool_name} ({part.outcome})",
                        "",
                        "```",
                        content,
                        "```",
                        "",
                    ]
                elif isinstance(part, SystemPromptPart):
                    lines += ["### system reminder", "", part.content, ""]
        else:
            tokens = f" ({format_tokens(record.usage.total_tokens)} tokens)" if record.usage else ""
            lines += [f"## assistant{tokens}", ""]
            for part in message.parts:
                if isinstance(part, TextPart):
                    lines += [part.content, ""]
                elif isinstance(part, ThinkingPart):
                    lines += ["> (thinking) " + part.content.replace("\n", "\n> "), ""]
                elif isinstance(part, ToolCallPart):
                    lines += [f"- call `{part.tool_name}` {json.dumps(part.args_as_dict())}", ""]
    return "\n".join(lines).rstrip() + "\n"


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")

"""``nestor sessions list|show|export|delete``: stored conversations, as tables or JSON."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from nestor.cli.tree_view import AgentNode
    from nestor.store.messages import MessageRecord
    from nestor.store.sessions import Session

app = typer.Typer(help="List, show, export and delete stored sessions.", no_args_is_help=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _open(ctx: typer.Context):
    from nestor.app import App
    from nestor.cli.options import CommonOptions

    options = ctx.obj if isinstance(ctx.obj, CommonOptions) else CommonOptions()
    return App.open(options.load_settings()), options


def _load(ctx: typer.Context, session_id: str) -> tuple[Session, list[MessageRecord]]:
    """Read one session (by id or unique prefix) and its messages."""
    application, _ = _open(ctx)
    try:
        session = application.sessions.get(session_id)
        return session, application.messages.list_records(session.id)
    finally:
        application.close()


@app.command("list")
def list_sessions(
    ctx: typer.Context,
    as_json: JsonOption = False,
    all_projects: Annotated[bool, typer.Option("--all", "-a", help="Sessions of every project.")] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many sessions.")] = 50,
) -> None:
    """List this project's sessions, newest first."""
    application, options = _open(ctx)
    try:
        project = None if all_projects else str(options.project_root)
        sessions = application.sessions.list(project, limit=limit)
    finally:
        application.close()
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
    from nestor.cli.tree_view import count_descendants

    application, _ = _open(ctx)
    try:
        session = application.sessions.get(session_id)
        records = application.messages.list_records(session.id)
        descendants = count_descendants(application.sessions, session.id)
    finally:
        application.close()
    if as_json:
        print(json.dumps(session_export(session, records), indent=2))
        return
    print(render_transcript(session, records))
    note = _relatives_note(session, descendants)
    if note:
        print(note)


def _load_tree(ctx: typer.Context, session_id: str) -> AgentNode:
    """Read a session (by id or unique prefix) and all its descendants."""
    from nestor.cli.tree_view import load_tree

    application, _ = _open(ctx)
    try:
        return load_tree(application.sessions, application.messages, application.sessions.get(session_id))
    finally:
        application.close()


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
) -> None:
    """Export a session with every message, as JSON (default) or Markdown."""
    session, records = _load(ctx, session_id)
    text = (
        render_transcript(session, records)
        if markdown
        else json.dumps(session_export(session, records), indent=2)
    )
    if output is None:
        print(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")
        print(f"exported {session.id} to {output}", file=sys.stderr)


@app.command("delete")
def delete_session(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="A session id (a unique prefix is enough).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a session, its messages and its sub-agent sessions."""
    from nestor.core.errors import NestorError

    application, _ = _open(ctx)
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
    finally:
        application.close()
    print(f"deleted {session.id}")


def session_to_dict(session: Session) -> dict[str, Any]:
    """The JSON form of a session row (usage and cost included)."""
    return {
        "id": session.id,
        "parent_id": session.parent_id,
        "project_path": str(session.project_path),
        "title": session.title,
        "agent_name": session.agent_name,
        "model": session.model,
        "status": session.status,
        "usage": session.usage.to_dict(),
        "cost_usd": session.usage.cost_usd,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
    }


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


def session_export(session: Session, records: list[MessageRecord]) -> dict[str, Any]:
    """A session with its messages, each as pydantic-ai's JSON plus nestor's usage."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from nestor.runtime.compaction import compaction_mark

    messages: list[dict[str, Any]] = []
    for record in records:
        data = ModelMessagesTypeAdapter.dump_python([record.message], mode="json")[0]
        mark = compaction_mark(record.message)
        messages.append(
            {
                "seq": record.seq,
                "kind": record.kind,
                "created_at": record.created_at,
                "usage": record.usage.to_dict() if record.usage else None,
                "compaction": None if mark is None else mark.to_metadata()["nestor"]["compaction"],
                "message": data,
            }
        )
    return {"session": session_to_dict(session), "messages": messages}


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

    from nestor.cli.render import counted
    from nestor.core.usage import format_cost, format_tokens
    from nestor.runtime.compaction import compaction_mark

    usage = session.usage
    lines = [
        f"# {session.title or 'Untitled session'}",
        "",
        f"- id: {session.id}",
        f"- project: {session.project_path}",
        f"- agent: {session.agent_name}, model: {session.model}, status: {session.status}",
        f"- tokens: {format_tokens(usage.input_tokens)} in, {format_tokens(usage.output_tokens)} out, "
        f"{usage.requests} requests; cost: {format_cost(usage.cost_usd)}",
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
                    lines += ["## user", "", str(part.content), ""]
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

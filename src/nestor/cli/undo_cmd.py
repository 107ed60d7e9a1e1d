"""``nestor undo``, ``nestor sessions fork``, and the lines showing an undo (the REPL and TUI use them)."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

from nestor.core.errors import NestorError

if TYPE_CHECKING:
    from nestor.app.checkpoints import Prompt, SessionCheckpoints, UndoPlan
    from nestor.app.records import Session, SessionStore
    from nestor.cli.options import CommonOptions
    from nestor.config.settings import Settings

_ACTIONS = {"restore": "restore", "create": "create ", "delete": "delete "}


def plan_lines(plan: UndoPlan, *, diffs: bool) -> list[str]:
    """An undo's plan as lines: what it undoes, each file and what happens to it, the diffs if asked."""
    if plan.refusal is not None:
        return [f"cannot undo: {plan.refusal}"]
    if not plan.files:
        lines = [f"undo {plan.title}: no file to put back (they already are as they were)"]
    else:
        count = f"{len(plan.files)} file" + ("s" if len(plan.files) != 1 else "")
        lines = [f"undo {plan.title}: {count}"]
        lines += [f"  {_ACTIONS[file.action]}  {file.path}" for file in plan.files]
    if plan.left:
        lines.append(
            "  left as they are (never snapshotted: over [checkpoints] max_file_mb, or nested repositories): "
            + ", ".join(plan.left)
        )
    if diffs:
        for file in plan.files:
            lines += ["", *file.diff.rstrip("\n").splitlines()]
    return lines


def prompt_lines(prompts: list[Prompt]) -> list[str]:
    """A session's prompts as ``/rewind`` and ``sessions show`` list them."""
    lines: list[str] = []
    for prompt in prompts:
        text = prompt.text.strip().splitlines()[0] if prompt.text.strip() else ""
        changed = f"{prompt.files} file" + ("s" if prompt.files != 1 else "") if prompt.files else "no file"
        lines.append(f"  {prompt.number:>3}  {text[:70]}  ({changed} changed)")
    return lines


def checkpoint_lines(checkpoints: SessionCheckpoints) -> list[str]:
    """A session's prompts and, under each, its snapshots' changes and who made them (``sessions show``)."""
    grouped = checkpoints.by_prompt()
    if not any(rows for _prompt, rows in grouped):
        return []
    lines = ["## checkpoints", ""]
    for (_prompt, rows), line in zip(grouped, prompt_lines([prompt for prompt, _ in grouped]), strict=True):
        lines.append(line.strip())
        for row in rows:
            changes = ", ".join(
                f"{c.status} {c.path}"
                + (" (undone)" if c.reverted else "")
                + ("" if c.agent_id else " (outside nestor)")
                for c in row.changes
            )
            who = f"{row.tool_name} by {row.agent_id}" if row.agent_id else row.kind
            skipped = f"; not snapshotted: {', '.join(row.skipped)}" if row.skipped else ""
            lines.append(f"    #{row.id} {who}: {changes or 'no change'}{skipped}")
    return lines


def run_undo(
    options: CommonOptions,
    *,
    session_id: str | None,
    to: int | None,
    code: bool,
    conversation: bool,
    dry_run: bool,
) -> int:
    """``nestor undo``: put back a session's changes (code, conversation or both); the exit code."""
    settings = options.load_settings()
    return asyncio.run(_undo(settings, session_id, to, code=code, conversation=conversation, dry_run=dry_run))


async def _undo(
    settings: Settings,
    session_id: str | None,
    to: int | None,
    *,
    code: bool,
    conversation: bool,
    dry_run: bool,
) -> int:
    from nestor.app.checkpoints import stored_session_checkpoints
    from nestor.app.records import SessionStore, open_database

    database = open_database(settings.database_path)
    try:
        sessions = SessionStore(database)
        session = _session(sessions, session_id, str(settings.project_root))
        if not dry_run:
            sessions.acquire(session.id)  # a session another nestor runs is refused
        try:
            checkpoints = stored_session_checkpoints(settings, database, session)
            number = checkpoints.prompt(to).number if to is not None else None
            if code:
                last = checkpoints.last_undoable() if number is None else None
                number = last.number if last is not None else number
                plan = await checkpoints.plan_undo(number)
                print("\n".join(plan_lines(plan, diffs=dry_run)))
                if plan.refusal is None and plan.files and not dry_run:
                    await checkpoints.apply(plan)
            if conversation:
                _rewind(checkpoints, number or _last_prompt(checkpoints), dry_run=dry_run)
        finally:
            if not dry_run:
                sessions.release(session.id)
    finally:
        database.close()
    if dry_run:
        print("(dry run: nothing was changed)")
    return 0


def _session(sessions: SessionStore, session_id: str | None, project: str) -> Session:
    """The session named, else the project's latest."""
    if session_id:
        return sessions.get(session_id)
    latest = sessions.latest(project)
    if latest is None:
        raise NestorError(
            f"no session to undo in {project}",
            hint="nestor sessions list --all shows the sessions of every project",
        )
    return latest


def _last_prompt(checkpoints: SessionCheckpoints) -> int:
    prompts = checkpoints.prompts()
    if not prompts:
        raise NestorError(f"session {checkpoints.session_id} has no prompt to undo")
    return prompts[-1].number


def _rewind(checkpoints: SessionCheckpoints, number: int, *, dry_run: bool) -> None:
    prompt = checkpoints.prompt(number)
    if dry_run:
        print(f"the conversation would go back to before prompt {number} ({prompt.text.strip()[:60]})")
        return
    kept = checkpoints.rewind_conversation(number)
    print(
        f"the conversation is back to before prompt {number}; all of it is kept in session {kept.id} "
        f"(nestor --resume {kept.id})"
    )


def run_fork(options: CommonOptions, session_id: str, at: int | None) -> None:
    """``nestor sessions fork``: print the new session's id."""
    from nestor.app.checkpoints import stored_session_checkpoints
    from nestor.app.records import SessionStore, open_database

    settings = options.load_settings()
    database = open_database(settings.database_path)
    try:
        session = SessionStore(database).get(session_id)
        fork = stored_session_checkpoints(settings, database, session).fork(at)
    finally:
        database.close()
    where = f" before message {at}" if at is not None else ""
    print(fork.id)
    print(f"forked {session.id}{where}; continue it with: nestor --resume {fork.id}", file=sys.stderr)

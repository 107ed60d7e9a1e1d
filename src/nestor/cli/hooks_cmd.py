"""``nestor hooks list|test|approve``: the shell hooks of Claude Code's events, and a project's approvals.

``list`` shows every configured hook with its event, matcher, source and state (``user``: your own;
``approved``; ``changed`` or ``new``: a project's hook that does not run until approved); ``--json``
prints ``{"hooks": [{"event", "matcher", "command", "timeout", "source", "state", "runs"}]}``.
``test EVENT`` fires the hooks that would run on a sample payload and prints what each answered.
``approve`` shows each project hook not approved and approves it as it is now.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from nestor.app.hook_setup import ListedHook
    from nestor.cli.options import CommonOptions
    from nestor.config.hooks import ConfiguredHook
    from nestor.config.settings import Settings

app = typer.Typer(
    help="List, test and approve hooks (Claude Code's format: [hooks], .claude/settings.json).",
    no_args_is_help=True,
)


def _options(ctx: typer.Context) -> CommonOptions:
    from nestor.cli.options import CommonOptions

    return ctx.obj if isinstance(ctx.obj, CommonOptions) else CommonOptions()


def _runs(listed: ListedHook) -> bool:
    return listed.state in ("user", "approved")


@app.command("list")
def list_hooks(
    ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
) -> None:
    """List every hook: event, matcher, command, where it comes from, and whether it runs.

    A project's hooks (a trusted folder's nestor.toml, .claude/settings.json and
    .claude/settings.local.json) run only once you approved each (nestor hooks approve).
    """
    from nestor.app.hook_setup import opened_hook_approvals

    settings = _options(ctx).load_settings()
    with opened_hook_approvals(settings) as approvals:
        listed = approvals.listed()
    if as_json:
        print(json.dumps({"hooks": [_hook_dict(item) for item in listed]}, indent=2))
        return
    for item in listed:
        hook = item.hook
        runs = "runs" if _runs(item) else "not approved: does not run"
        print(f"{hook.event} [{hook.matcher or '*'}] {hook.command}")
        print(f"  from {hook.source} ({item.state}; {runs}), timeout {hook.timeout_s:g} s")
    if not listed:
        print("no hooks configured")
    for line in _untrusted_lines(settings):
        print(line)


@app.command("test")
def test_hooks(
    ctx: typer.Context,
    event: Annotated[str, typer.Argument(help="The event: PreToolUse, Stop, SessionStart, ...")],
    tool: Annotated[str | None, typer.Option("--tool", help="The tool's name (tool events).")] = None,
    tool_input: Annotated[
        str | None, typer.Option("--input", help="The tool's input as a JSON object.")
    ] = None,
) -> None:
    """Run the hooks that would run on EVENT on a sample payload and print what each decided."""
    from nestor.app import App
    from nestor.config.hooks import HOOK_EVENTS
    from nestor.core.errors import UsageError

    if event not in HOOK_EVENTS:
        raise UsageError(f"unknown hook event {event!r}", hint=f"one of: {', '.join(HOOK_EVENTS)}")
    arguments = _input(tool_input)
    settings = _options(ctx).load_settings()
    notices: list[str] = []
    app = App.open(settings, notify=notices.append)
    try:
        decisions = asyncio.run(app.test_hooks(event, tool=tool, tool_input=arguments))
    finally:
        app.close()
    for line in notices:
        print(line)
    if not decisions:
        print(f"no hook ran on {event}" + (f" for {tool}" if tool else ""))
    for label, answer in decisions:
        print(f"{label}: {json.dumps(answer)}")


@app.command("approve")
def approve(ctx: typer.Context) -> None:
    """Show each project hook not approved (or changed since) and approve it, so that it runs.

    A project's hooks run as your own commands, outside the sandbox: read each before you approve.
    Trusting the folder (nestor trust, --trust) approves none; nestor run skips a hook not approved,
    the REPL and the TUI ask before they start, and nestor acp asks the editor.
    """
    from nestor.app.hook_setup import approve_hooks, pending_hooks

    settings = _options(ctx).load_settings()
    pending = pending_hooks(settings)
    approve_hooks(settings, [item.hook for item in pending])
    for item in pending:
        was = {"changed": ", changed since you approved it", "declined": ", declined before"}
        print(f"approved hook {item.hook.name}{was.get(item.state, '')}:\n  {item.hook.command}")
    if not pending:
        print("no project hook waits for approval")
    for line in _untrusted_lines(settings):
        print(line)


def ask_to_approve_hooks(settings: Settings, ask: Callable[[str], str]) -> None:
    """Before the REPL or the TUI starts: ask about each project hook never approved or changed since.

    A yes is stored; a no is stored too (the hook is not asked about again until it changes), and
    a hook declined does not run, which the session says in one line.

    Raises:
        StoreError: The database, where approvals are, fails.

    """
    from nestor.app.hook_setup import (
        ASKED,
        approve_hooks,
        decline_hooks,
        hook_approval_request,
        pending_hooks,
    )
    from nestor.cli.mcp_cmd import answered_yes

    approved: list[ConfiguredHook] = []
    declined: list[ConfiguredHook] = []
    for item in pending_hooks(settings):
        if item.state not in ASKED:
            continue
        request = hook_approval_request(item)
        question = f"{request.description}?\n  {request.target}\nRun it, now and while it stays so? [y/N] "
        (approved if answered_yes(ask, question) else declined).append(item.hook)
    if approved:
        approve_hooks(settings, approved)
    if declined:
        decline_hooks(settings, declined)


def _untrusted_lines(settings: Settings) -> list[str]:
    skipped = [item.key for item in settings.ignored if item.reason == "untrusted" and "hooks" in item.key]
    if not skipped:
        return []
    return [
        f"not read in this untrusted folder: {', '.join(skipped)} (nestor trust, then nestor hooks approve)"
    ]


def _input(text: str | None) -> dict[str, Any] | None:
    from nestor.core.errors import UsageError

    if text is None:
        return None
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"--input is not JSON: {exc}", hint='give an object, e.g. {"command": "ls"}'
        ) from None
    if not isinstance(value, dict):
        raise UsageError("--input must be a JSON object", hint='e.g. {"command": "ls"}')
    return value  # pyright: ignore[reportUnknownVariableType]


def _hook_dict(item: ListedHook) -> dict[str, Any]:
    hook = item.hook
    return {
        "event": hook.event,
        "matcher": hook.matcher,
        "command": hook.command,
        "timeout": hook.timeout_s,
        "source": hook.source,
        "state": item.state,
        "runs": _runs(item),
    }

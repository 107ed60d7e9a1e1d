"""``nestor run``: one prompt, run to completion, printed as text, JSON or a stream of JSON events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from typing import TYPE_CHECKING, Any, TextIO

from nestor.cli.options import CommonOptions
from nestor.cli.run_progress import TextProgress
from nestor.core.events import Event
from nestor.core.usage import Usage, format_cost, format_tokens

if TYPE_CHECKING:
    from nestor.app import App
    from nestor.runtime.features.titles import TitleWriter
    from nestor.runtime.kernel.loop import SessionAgent
    from nestor.runtime.kernel.setup import RunResult

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_STOPPED = 3
EXIT_CANCELLED = 130
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Each stops a run as Ctrl-C does: Ctrl-C itself, ``kill``, and a terminal that closed."""
TITLE_WAIT_S = 10.0
"""Longest wait, after the answer, for the new session's title before the process exits."""


def run_headless(
    options: CommonOptions,
    prompt: str,
    *,
    output_format: str,
    resume: str | None = None,
    continue_latest: bool = False,
) -> int:
    """Run ``prompt`` on the main agent without asking the user anything; return the exit code."""
    settings = options.load_settings()
    return asyncio.run(
        _run(settings, prompt, output_format=output_format, resume=resume, continue_latest=continue_latest)
    )


async def _run(
    settings: Any, prompt: str, *, output_format: str, resume: str | None, continue_latest: bool
) -> int:
    from nestor.app import App, title_from_prompt

    app = App.open(settings, notify=lambda message: print(f"nestor: {message}", file=sys.stderr, flush=True))
    try:
        session = app.find_session(resume=resume, continue_latest=continue_latest)
        agent = await app.start_main_agent(session=session, asker=None, title=title_from_prompt(prompt))
        app.bus.subscribe(_event_printer(output_format, sys.stdout, sys.stderr))

        received: list[int] = []
        terminal = terminal_outputs()

        def interrupt(signum: int) -> None:
            received.append(signum)
            if signum == signal.SIGHUP:
                detach_from_terminal(terminal)
            app.coordinator.cancel(agent.session_id)
            if app.tree is not None:
                app.tree.background.cancel_all()
            if app.titles is not None:
                app.titles.cancel()

        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, interrupt, signum)
        children_before = _children_usage(app, agent.session_id)
        try:
            result = await app.coordinator.run(agent.session_id, prompt)
            main_usage = Usage() + result.usage
            result = await _finish_background(app, agent, result, main_usage)
            tree_usage = main_usage + _children_usage(app, agent.session_id).minus(children_before)
            if output_format == "stream-json":
                # The title's event comes before the result line, which stays the last one.
                await _wait_for_titles(app.titles)
            _print_outcome(_outcome(agent, result, tree_usage, main_usage), output_format)
            # After the answer is out: the session's title is worth a short wait, not a delay.
            await _wait_for_titles(app.titles)
        finally:
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)
        code = _exit_code(result.stop_reason, result.is_error)
        # Stopped by a signal: the shell's convention, 128 + its number (130 Ctrl-C, 129, 143).
        return 128 + received[0] if received and code == EXIT_CANCELLED else code
    finally:
        if app.titles is not None:
            app.titles.cancel()
        app.close()


def terminal_outputs() -> tuple[int, ...]:
    """The file descriptors of stdout and stderr that are a terminal, to detach after a hang-up.

    Asked at start: once the terminal hangs up, it no longer answers as one.
    """
    import os

    return tuple(fd for fd in (1, 2) if os.isatty(fd))


def detach_from_terminal(fds: tuple[int, ...]) -> None:
    """Point ``fds`` (stdout, stderr that were a terminal) at /dev/null, after SIGHUP.

    Writing to a terminal that hung up fails (EIO): what nestor still prints while it stops would
    turn into errors. Streams redirected to a file or a pipe are not in ``fds`` and keep working.
    """
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _children_usage(app: App, session_id: str) -> Usage:
    """What the sub-agents of a session have spent so far (each child's total includes its own)."""
    total = Usage()
    for child in app.sessions.children(session_id):
        total.add(child.usage)
    return total


async def _finish_background(
    app: App, agent: SessionAgent, result: RunResult, main_usage: Usage
) -> RunResult:
    """Wait for background sub-agents; deliver their notices in more runs of the main agent.

    A headless run ends only after every background agent ended and its notice reached the main
    agent, whose answer to them is the run's result (``main_usage`` adds up every run's usage).
    A run that did not complete cancels them.
    """
    tree = app.tree
    if tree is None:
        return result
    while result.stop_reason == "completed" and (tree.background.any_running() or agent.has_pending):
        await tree.background.wait_all()
        if agent.has_pending:
            result = await app.coordinator.run(agent.session_id, None)
            main_usage.add(result.usage)
    if tree.background.any_running():
        tree.background.cancel_all()
        await tree.background.wait_all()
    return result


async def _wait_for_titles(titles: TitleWriter | None) -> None:
    if titles is not None:
        await titles.wait(TITLE_WAIT_S)


def _outcome(agent: SessionAgent, result: RunResult, tree_usage: Usage, main_usage: Usage) -> dict[str, Any]:
    """The ``result`` line: the answer, and what the whole run cost (sub-agents and summaries included).

    ``usage``/``cost_usd`` count the main agent's requests and its sub-agents' (the session's
    title, written in the background, is not included: it counts in the session's totals);
    ``main_usage`` only the main agent's own.
    """
    outcome: dict[str, Any] = {
        "type": "result",
        "session_id": agent.session_id,
        "result": result.text,
        "is_error": result.is_error,
        "stop_reason": result.stop_reason,
        "num_turns": result.num_turns,
        "duration_s": round(result.duration_s, 3),
        "model": agent.setup.model_name,
        "usage": tree_usage.to_dict(),
        "cost_usd": tree_usage.cost_usd,
        "main_usage": main_usage.to_dict(),
    }
    if result.hint:
        outcome["hint"] = result.hint
    return outcome


def _print_outcome(outcome: dict[str, Any], output_format: str) -> None:
    if output_format == "text":
        _print_text_outcome(outcome)
    else:
        print(json.dumps(outcome), flush=True)


def _exit_code(stop_reason: str, is_error: bool) -> int:
    if is_error:
        return EXIT_ERROR
    if stop_reason == "cancelled":
        return EXIT_CANCELLED
    if stop_reason != "completed":
        return EXIT_STOPPED
    return EXIT_OK


def _print_text_outcome(outcome: dict[str, Any]) -> None:
    if outcome["is_error"]:
        print(f"error: {outcome['result']}", file=sys.stderr)
        if outcome.get("hint"):
            print(f"hint: {outcome['hint']}", file=sys.stderr)
        return
    print(outcome["result"], flush=True)
    usage = outcome["usage"]
    if sys.stderr.isatty():
        print(
            f"[{outcome['num_turns']} turns, {format_tokens(usage['total_tokens'])} tokens, "
            f"{format_cost(outcome['cost_usd'])}, session {outcome['session_id']}]",
            file=sys.stderr,
        )


def _event_printer(output_format: str, out: TextIO, err: TextIO):
    """Return the bus handler that shows progress for ``output_format``."""

    def stream_json(event: Event) -> None:
        out.write(event.model_dump_json() + "\n")
        out.flush()

    def nothing(_event: Event) -> None:
        return None

    if output_format == "stream-json":
        return stream_json
    if output_format == "text":
        # Tools, retries, denials and sub-agents' start and done lines (see run_progress).
        return TextProgress(err) if err.isatty() else nothing
    return nothing

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
from nestor.core.usage import format_cost, format_tokens

if TYPE_CHECKING:
    from nestor.app import Outcome
    from nestor.config import Settings

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_STOPPED = 3
EXIT_REFUSED = 4
"""The model refused (its provider reported a refusal or its content filter): not a budget to raise."""
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
    fork: bool = False,
) -> int:
    """Run ``prompt`` on the main agent without asking the user anything; return the exit code.

    ``fork`` runs it on a copy of the resumed session (``--fork-session``), which stays as it was.
    """
    settings = options.load_settings()
    return asyncio.run(
        _run(
            settings,
            prompt,
            output_format=output_format,
            resume=resume,
            continue_latest=continue_latest,
            fork=fork,
        )
    )


async def _run(
    settings: Settings,
    prompt: str,
    *,
    output_format: str,
    resume: str | None,
    continue_latest: bool,
    fork: bool,
) -> int:
    from nestor.app import App

    app = App.open(settings, notify=lambda message: print(f"nestor: {message}", file=sys.stderr, flush=True))
    try:
        session = app.find_session(resume=resume, continue_latest=continue_latest)
        if fork and session is not None:
            session = app.fork_session(session)
        conversation = await app.conversation(session=session, interactive=False, first_prompt=prompt)
        app.subscribe(_event_printer(output_format, sys.stdout, sys.stderr))

        received: list[int] = []
        terminal = terminal_outputs()

        def interrupt(signum: int) -> None:
            received.append(signum)
            if signum == signal.SIGHUP:
                detach_from_terminal(terminal)
            conversation.stop()

        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, interrupt, signum)
        try:
            outcome = await conversation.run_to_completion(prompt)
            if output_format == "stream-json":
                # The title's event comes before the result line, which stays the last one.
                await conversation.wait_for_title(TITLE_WAIT_S)
            _print_outcome(outcome_json(outcome), output_format)
            # After the answer is out: the session's title is worth a short wait, not a delay.
            await conversation.wait_for_title(TITLE_WAIT_S)
        finally:
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)
        code = _exit_code(outcome.stop_reason, outcome.is_error)
        # Stopped by a signal: the shell's convention, 128 + its number (130 Ctrl-C, 129, 143).
        return 128 + received[0] if received and code == EXIT_CANCELLED else code
    finally:
        await app.aclose()  # shuts language servers down; stops a title still being written


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


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    """The ``result`` line: the answer, and what the whole run cost (sub-agents and summaries included).

    ``usage``/``cost_usd`` count the main agent's requests and its sub-agents' (the session's
    title, written in the background, is not included: it counts in the session's totals);
    ``main_usage`` only the main agent's own.
    """
    line: dict[str, Any] = {
        "type": "result",
        "session_id": outcome.session_id,
        "result": outcome.text,
        "is_error": outcome.is_error,
        "stop_reason": outcome.stop_reason,
        "num_turns": outcome.num_turns,
        "duration_s": round(outcome.duration_s, 3),
        "model": outcome.model,
        "usage": outcome.usage.to_dict(),
        "cost_usd": outcome.usage.cost_usd,
        "main_usage": outcome.main_usage.to_dict(),
    }
    if outcome.hint:
        line["hint"] = outcome.hint
    return line


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
    if stop_reason == "refusal":
        return EXIT_REFUSED
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

"""A shell hook as a hook callback: its command run with the event's JSON on stdin.

The command runs as the user's own command, as Claude Code runs it: in the project root, outside
the sandbox, with ``bash -c`` (``sh -c`` without bash), the environment of nestor plus
``CLAUDE_PROJECT_DIR`` and ``NESTOR_PROJECT_DIR``, in a process group of its own that is killed
whole when the hook times out or the agent is cancelled (what a hook leaves running after it exits is
its own, as in Claude Code). Its answer becomes the object an
in-process callback would return, so one reader (``outcome.py``) decides for both:

- exit 0: stdout as a JSON object when it is one; other stdout is context for the model on
  UserPromptSubmit and SessionStart, and ignored elsewhere;
- exit 2: a block with stderr as its reason, in the shape of each event (PreToolUse's deny,
  PermissionRequest's deny, ``decision: "block"`` where an event can be blocked, else a message
  to the user);
- any other exit: an error shown to the user (:class:`HookFailed`), nothing blocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nestor.config.hooks import ConfiguredHook

_OUTPUT_LIMIT = 1_000_000
_CONTEXT_EVENTS = frozenset({"UserPromptSubmit", "SessionStart"})
_BLOCKABLE = frozenset(
    {"UserPromptSubmit", "Stop", "SubagentStop", "PostToolUse", "PostToolUseFailure", "PreCompact"}
)


class HookFailed(Exception):
    """A hook that did not answer: a non-blocking error, shown to the user."""


@dataclass(frozen=True, slots=True)
class CommandHook:
    """A :class:`ConfiguredHook` as a callback (``await hook(input, tool_use_id, context)``).

    Attributes:
        hook: The hook as configured.
        project_root: Where it runs.

    """

    hook: ConfiguredHook
    project_root: Path

    @property
    def dedupe_key(self) -> str:
        """Identical commands of one event run once."""
        return self.hook.command

    @property
    def label(self) -> str:
        """How the hook is named to the user."""
        return self.hook.command if len(self.hook.command) <= 80 else self.hook.command[:77] + "..."

    async def __call__(
        self, payload: dict[str, Any], tool_use_id: str | None, context: object
    ) -> dict[str, Any]:
        """Run the command; its answer as an object (see the module's docstring).

        Raises:
            HookFailed: It exited with a code other than 0 and 2, or could not start.

        """
        code, stdout, stderr = await run_command(self.hook.command, json.dumps(payload), self.project_root)
        event = str(payload.get("hook_event_name", self.hook.event))
        if code == 0:
            return _answer(event, stdout)
        if code == 2:
            return blocking_answer(event, stderr.strip() or f"blocked by hook {self.label}")
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else "no error output"
        raise HookFailed(f"exit code {code}: {detail}")


def blocking_answer(event: str, reason: str) -> dict[str, Any]:
    """What exit code 2 means on ``event``, as the object a callback would return."""
    if event == "PreToolUse":
        specific = {"hookEventName": event, "permissionDecision": "deny", "permissionDecisionReason": reason}
        return {"hookSpecificOutput": specific}
    if event == "PermissionRequest":
        decision = {"behavior": "deny", "message": reason}
        return {"hookSpecificOutput": {"hookEventName": event, "decision": decision}}
    if event in _BLOCKABLE:
        return {"decision": "block", "reason": reason}
    return {"systemMessage": reason}


def _answer(event: str, stdout: str) -> dict[str, Any]:
    text = stdout.strip()
    if text.startswith("{"):
        try:
            parsed: Any = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            return parsed  # pyright: ignore[reportUnknownVariableType]
    if text and event in _CONTEXT_EVENTS:
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return {}


async def run_command(
    command: str, stdin: str, cwd: Path, env: Mapping[str, str] | None = None
) -> tuple[int, str, str]:
    """Run ``command`` in ``cwd`` with ``stdin``; its exit code, stdout and stderr.

    A cancel (the hook's time-out) kills its whole process group.

    Raises:
        HookFailed: The shell could not start.

    """
    shell = shutil.which("bash") or "/bin/sh"
    environment = dict(os.environ if env is None else env)
    environment["CLAUDE_PROJECT_DIR"] = environment["NESTOR_PROJECT_DIR"] = str(cwd)
    try:
        process = await asyncio.create_subprocess_exec(
            shell,
            "-c",
            command,
            cwd=cwd,
            env=environment,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise HookFailed(f"cannot start: {exc.strerror or exc}") from None
    try:
        stdout, stderr = await process.communicate(stdin.encode("utf-8"))
    except BaseException:  # timed out or cancelled: the hook and whatever it started end now
        _kill_group(process.pid)
        raise
    code = process.returncode if process.returncode is not None else -1
    return code, _decoded(stdout), _decoded(stderr)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _decoded(data: bytes) -> str:
    return data[:_OUTPUT_LIMIT].decode("utf-8", errors="replace")

"""The ``bash`` tool: run a shell command in the project root and return its output.

The command runs as ``bash -c COMMAND`` in a new session, so it leads its own process group: on a
timeout or a cancellation the whole group (the shell and everything it started) is stopped, first
with SIGTERM and, after a short grace, with SIGKILL. stderr is merged into stdout so the output
reads in the order it was written. Output is read incrementally and only its head and tail are kept,
so a command printing gigabytes neither deadlocks nor fills memory.

Given a :class:`~nestor.tools.sandbox.policy.SandboxPolicy`, the shell runs in the OS sandbox of
:mod:`nestor.tools.sandbox` (bubblewrap, else Landlock); where neither works it runs as is and the
user is told once.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import dataclasses
import os
import re
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from nestor.tools.base import PermissionRequest, Tool, ToolContext, ToolError, ToolResult, clamp_timeout
from nestor.tools.git.neutralize import neutralizing_environment
from nestor.tools.git.runner import submodule_trees
from nestor.tools.sandbox.detect import Backend, detect
from nestor.tools.sandbox.launch import Launch, SandboxError, sandboxed
from nestor.tools.sandbox.policy import SandboxPolicy

# What a command sees when the sandbox refuses it; only then is the sandbox named, so an ordinary
# failing test run does not send a small model after a sandbox problem it never had.
_WRITE_REFUSALS = re.compile(r"Read-only file system|Permission denied|Operation not permitted")
_NETWORK_REFUSALS = re.compile(
    r"Connection refused|Network is unreachable|Temporary failure in name resolution|"
    r"Could not resolve host|Name or service not known"
)
OUTPUT_LIMIT_CHARS = 30_000
"""Output beyond this many characters is cut in the middle, keeping its head and tail."""

KILL_GRACE_SECONDS = 2.0
CANCEL_GRACE_SECONDS = 0.5
"""On cancel the user is waiting: a shorter grace keeps "Ctrl-C stops the turn within a second"."""
"""How long a process group gets to exit after SIGTERM before it is sent SIGKILL."""

DEFAULT_TIMEOUT_SECONDS = 120
MAX_TIMEOUT_SECONDS = 600

COMMAND_ENVIRONMENT = {
    "NESTOR": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "TERM": "dumb",
}
"""Set on top of the inherited environment: nothing may wait for a terminal that is not there."""

_READ_CHUNK_BYTES = 65_536
_POLL_SECONDS = 0.05
_PERMISSION_DESCRIPTION_CHARS = 80


class BashParams(BaseModel):
    """Parameters of the ``bash`` tool."""

    command: str = Field(description="The shell command to run with `bash -c`, in the project root.")
    timeout: int = Field(
        default=DEFAULT_TIMEOUT_SECONDS,
        ge=1,
        description=f"Seconds before the command is stopped (default {DEFAULT_TIMEOUT_SECONDS}, "
        f"max {MAX_TIMEOUT_SECONDS}).",
    )
    description: str | None = Field(
        default=None, description="A few words saying what the command does, shown to the user."
    )


class OutputBuffer:
    """Keeps the head and the tail of a stream of text, counting what falls between them.

    Memory stays bounded by about ``limit`` characters however much text is added.
    """

    def __init__(self, limit: int) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head: list[str] = []
        self._head_chars = 0
        self._tail = ""
        self.total_chars = 0

    def add(self, text: str) -> None:
        """Append ``text`` to the stream."""
        self.total_chars += len(text)
        room = self._head_limit - self._head_chars
        if room > 0:
            self._head.append(text[:room])
            self._head_chars += min(room, len(text))
            text = text[room:]
        if text:
            # Trimming only when the tail doubles keeps appends amortised O(1).
            self._tail += text
            if len(self._tail) > 2 * self._tail_limit:
                self._tail = self._tail[-self._tail_limit :]

    @property
    def stored_chars(self) -> int:
        """How many characters the buffer holds right now."""
        return self._head_chars + len(self._tail)

    @property
    def cut_chars(self) -> int:
        """How many characters :meth:`text` leaves out."""
        return max(0, self.total_chars - self._head_limit - self._tail_limit)

    def text(self) -> str:
        """The kept text, with a marker in place of what was cut."""
        head = "".join(self._head)
        tail = self._tail[-self._tail_limit :] if self._tail else ""
        if not self.cut_chars:
            return head + tail
        return f"{head}\n\n[... {self.cut_chars} characters cut ...]\n\n{tail}"


@dataclass(slots=True)
class _Outcome:
    exit_code: int | None
    timed_out: bool
    stopped_background: bool
    output_abandoned: bool


class BashTool(Tool[BashParams]):
    """Runs a shell command in the project root, stopping its whole process group when it must."""

    name: ClassVar[str] = "bash"
    params_model: ClassVar[type[BaseModel]] = BashParams

    def __init__(
        self,
        *,
        output_limit: int = OUTPUT_LIMIT_CHARS,
        kill_grace_seconds: float = KILL_GRACE_SECONDS,
        sandbox: SandboxPolicy | None = None,
        backend: Backend | Literal["auto"] = "auto",
        notify: Callable[[str], None] | None = None,
        neutralize_repository_git: bool = False,
    ) -> None:
        """Make the tool.

        Args:
            output_limit: Characters of output kept (head and tail).
            kill_grace_seconds: How long a stopped process group gets between SIGTERM and SIGKILL.
            sandbox: The OS sandbox commands run in; None runs them unsandboxed.
            backend: The sandbox backend; ``auto`` takes what :func:`~nestor.tools.sandbox.detect.detect`
                finds on this machine.
            notify: Told, once, when the sandbox is missing or cannot enforce all of the policy.
            neutralize_repository_git: Override every setting of the project's repository that
                names a command (:mod:`nestor.tools.git.neutralize`) for the git a command runs: the
                project is not trusted.

        """
        self._output_limit = output_limit
        self._kill_grace_seconds = kill_grace_seconds
        self._sandbox = sandbox
        self._backend: Backend | Literal["auto"] = backend
        self._notify = notify
        self._notified = False
        self._neutralize_repository_git = neutralize_repository_git

    def permission(self, params: BashParams, ctx: ToolContext) -> PermissionRequest | None:
        """Every command needs an ``execute`` permission; the runtime decides it."""
        return PermissionRequest(
            tool_name=self.name,
            action="execute",
            target=params.command,
            description=f"Run: {_summarise_command(params.command)}",
            grant_key=params.command,
        )

    async def run(self, params: BashParams, ctx: ToolContext) -> ToolResult:
        """Run the command and report its output, exit code and whether it timed out."""
        notes: list[str] = []
        timeout = clamp_timeout(params.timeout, MAX_TIMEOUT_SECONDS, notes)
        if not ctx.project_root.is_dir():
            raise ToolError(f"The project root {ctx.project_root} is not a directory.")

        buffer = OutputBuffer(self._output_limit)
        git_env = await neutralizing_environment(ctx.project_root) if self._neutralize_repository_git else {}
        launch = await self._launch(params.command, ctx.project_root)
        launch.env.update(git_env)
        try:
            process = await _start_stopping_on_cancel(launch, ctx.project_root)
            outcome = await self._supervise(process, buffer, timeout)
        finally:
            launch.cleanup()
        notes.extend(launch.remove_planted())
        if (
            outcome.exit_code
            and not outcome.timed_out
            and launch.policy is not None
            and _blames_the_sandbox(buffer.text(), launch.policy)
        ):
            notes.insert(0, launch.policy.refusal_note(buffer.text()))
        return _result(params, buffer, outcome, timeout, notes)

    async def _launch(self, command: str, project_root: Path) -> Launch:
        """The argv running ``command``: sandboxed when a policy is set and a backend works."""
        argv = ["bash", "-c", command]
        if self._sandbox is None or not self._sandbox.enabled:
            return Launch(argv)
        if self._backend != "auto":
            backend: Backend | None = self._backend
            abi = 0
            if backend == "landlock":
                from nestor.tools.sandbox.landlock_exec import abi_version

                abi = abi_version()
        else:
            found = await detect()
            if self._notify is not None and not self._notified and (notice := found.notice()):
                self._notified = True
                self._notify(notice)
            backend, abi = found.backend, found.landlock_abi
        policy = self._sandbox
        if policy.mode == "workspace-write" and backend is not None:
            policy = dataclasses.replace(policy, submodule_trees=await submodule_trees(project_root))
        try:
            return sandboxed(backend, policy, project_root, argv, landlock_abi=abi)
        except SandboxError as error:
            raise ToolError(f"The command was not run: its sandbox could not be set up ({error}).") from error

    async def _supervise(
        self, process: asyncio.subprocess.Process, buffer: OutputBuffer, timeout: int
    ) -> _Outcome:
        assert process.stdout is not None
        reader = asyncio.create_task(_pump(process.stdout, buffer))
        timed_out = stopped_background = abandoned = False
        try:
            try:
                async with asyncio.timeout(timeout):
                    await _until_output_ends_or_shell_exits(process, reader)
                    if reader.done():
                        # A command may close its output and keep running.
                        await process.wait()
            except TimeoutError:
                timed_out = True
                await self._stop_group(process)
            # Background jobs that inherited the pipe keep it open after the shell exits.
            if not await _finished_within(reader, self._kill_grace_seconds):
                stopped_background = not timed_out
                await self._stop_group(process)
                abandoned = not await _finished_within(reader, self._kill_grace_seconds)
        except asyncio.CancelledError:
            reader.cancel()
            await self._stop_group(process, grace=min(self._kill_grace_seconds, CANCEL_GRACE_SECONDS))
            raise
        finally:
            if not reader.done():
                reader.cancel()
        return _Outcome(process.returncode, timed_out, stopped_background, abandoned)

    async def _stop_group(self, process: asyncio.subprocess.Process, *, grace: float | None = None) -> None:
        """SIGTERM the process group, give it the grace period, then SIGKILL what is left."""
        group = process.pid
        loop = asyncio.get_running_loop()
        grace = self._kill_grace_seconds if grace is None else grace
        _signal_group(group, signal.SIGTERM)
        try:
            deadline = loop.time() + grace
            # Polling: nothing signals when the last member of a process group is gone.
            while loop.time() < deadline and _group_has_live_members(group):  # noqa: ASYNC110
                await asyncio.sleep(_POLL_SECONDS)
        finally:
            # Also reached when cancelled again during the grace: nothing may outlive the call.
            _signal_group(group, signal.SIGKILL)
        # Not process.wait(): it also waits for the pipe, which a process outside the group may hold.
        deadline = loop.time() + self._kill_grace_seconds
        while process.returncode is None and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(_POLL_SECONDS / 10)


def _blames_the_sandbox(output: str, policy: SandboxPolicy) -> bool:
    """Whether a failed command's output looks like the sandbox refused it."""
    if _WRITE_REFUSALS.search(output):
        return True
    return not policy.allows_network and _NETWORK_REFUSALS.search(output) is not None


async def _start(launch: Launch, cwd: Path) -> asyncio.subprocess.Process:
    try:
        return await asyncio.create_subprocess_exec(
            *launch.argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=os.environ | COMMAND_ENVIRONMENT | launch.env,
            start_new_session=True,
            preexec_fn=launch.preexec,
            pass_fds=launch.pass_fds,
        )
    except FileNotFoundError as error:
        raise ToolError(f"{launch.argv[0]} is not installed or not on PATH.") from error
    except subprocess.SubprocessError as error:  # preexec_fn failed: the sandbox could not be applied
        raise ToolError(f"The command was not run: its sandbox could not be applied ({error}).") from error


async def _start_stopping_on_cancel(launch: Launch, cwd: Path) -> asyncio.subprocess.Process:
    """Start the shell; if cancelled meanwhile, kill its whole process group before re-raising.

    Cancelling ``create_subprocess_exec`` after the fork kills only the shell (asyncio's transport
    ``close()``), so jobs it already started would outlive the call.
    """
    spawn = asyncio.ensure_future(_start(launch, cwd))
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        while not spawn.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({spawn})
        if not spawn.cancelled() and spawn.exception() is None:
            _signal_group(spawn.result().pid, signal.SIGKILL)
        raise


async def _pump(stream: asyncio.StreamReader, buffer: OutputBuffer) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while chunk := await stream.read(_READ_CHUNK_BYTES):
        buffer.add(decoder.decode(chunk))
    buffer.add(decoder.decode(b"", final=True))


async def _until_output_ends_or_shell_exits(
    process: asyncio.subprocess.Process, reader: asyncio.Task[None]
) -> None:
    """Return when the output ends or, if background jobs hold it open, when the shell exits.

    ``process.wait()`` cannot tell: on Python 3.11 it also waits for the pipes to close.
    """
    interval = 0.005
    while not await _finished_within(reader, interval):
        if process.returncode is not None:
            return
        interval = min(interval * 2, _POLL_SECONDS * 2)


async def _finished_within(task: asyncio.Task[None], seconds: float) -> bool:
    done, _ = await asyncio.wait({task}, timeout=seconds)
    return bool(done)


def _signal_group(group: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)


def _group_has_live_members(group: int) -> bool:
    """Whether any process of ``group`` is still running (zombies awaiting reaping do not count)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command name: state, ppid, pgrp, ...
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 2 and fields[2] == str(group) and fields[0] != "Z":
            return True
    return False


def _summarise_command(command: str) -> str:
    lines = command.strip().splitlines() or [""]
    summary = lines[0]
    shortened = len(lines) > 1 or len(summary) > _PERMISSION_DESCRIPTION_CHARS
    if shortened:
        summary = summary[: _PERMISSION_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return summary


def _result(
    params: BashParams, buffer: OutputBuffer, outcome: _Outcome, timeout: int, notes: list[str]
) -> ToolResult:
    output = buffer.text().rstrip("\n") or "(no output)"
    parts: list[str] = []
    if outcome.timed_out:
        parts.append(f"Command timed out after {timeout} s and was stopped. Output so far:")
    parts.append(output)
    if not outcome.timed_out and outcome.exit_code:
        parts.append(f"Exit code: {outcome.exit_code}")
    if outcome.stopped_background:
        parts.append(
            "Note: background processes kept the output open after the command ended and were stopped; "
            "redirect their output (e.g. `cmd > log 2>&1 &`) to keep them running."
        )
    if outcome.output_abandoned:
        parts.append("Note: a process outside the command's process group kept the output open.")
    parts.extend(notes)
    return ToolResult(
        content="\n\n".join(parts),
        is_error=outcome.timed_out,
        metadata={
            "exit_code": outcome.exit_code,
            "timed_out": outcome.timed_out,
            "cut_chars": buffer.cut_chars,
            "description": params.description,
        },
    )

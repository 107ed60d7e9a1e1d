"""One job of a batch, run to its result: checkout, setup command, the agent tree, patch, session export.

The agent runs as ``nestor run`` runs it (:class:`~nestor.app.App`, a conversation that asks
nobody: what the rules leave to the user is denied unless ``--yolo``), in the job's checkout, a
folder no user trusts, so the repository's own settings widen nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nestor.app.batch.checkout import RepoSource, make_checkout
from nestor.app.batch.jobs import Job
from nestor.core.errors import NestorError
from nestor.core.events import Event, RequestFinished
from nestor.core.usage import Usage
from nestor.tools.git.copies import CopyError, patch

if TYPE_CHECKING:
    from nestor.app.conversation import Conversation, Outcome
    from nestor.runtime.kernel.hooks import Hook

SETUP_TIMEOUT_S = 1800.0
"""A job's setup command (an install, a build) that takes longer is stopped and the job is an error."""
BUDGET_STOPS = frozenset({"max_iterations", "token_budget", "timeout", "loop"})
_SETUP_TAIL = 400


@dataclass(frozen=True, slots=True)
class JobOptions:
    """What every job of a batch shares.

    Attributes:
        yolo: Tool calls the rules leave to the user are allowed (``--yolo``), not denied.
        keep: The job's checkout is kept after it (``--keep``), its path in the result.
        model: The batch's model, for the jobs that name none.
        data_dir: The session store the jobs write (None: the user's, from the settings).
        env: The environment provider credentials are read from (None: this process's).

    """

    yolo: bool = False
    keep: bool = False
    model: str | None = None
    data_dir: Path | None = None
    env: Mapping[str, str] | None = None


@dataclass
class JobHandle:
    """A running job as the runner sees it: its live usage, when it started, and how to stop it."""

    job_id: str
    started: float = field(default_factory=time.monotonic)
    usage: Usage = field(default_factory=Usage)
    stopped: bool = False
    conversation: Conversation | None = None
    on_stop: list[Callable[[], None]] = field(default_factory=list[Callable[[], None]])

    def stop(self) -> None:
        """Cancel the job's run (it is recorded as cancelled, with what it changed until then)."""
        self.stopped = True
        if self.conversation is not None:
            self.conversation.stop()
        for cancel in self.on_stop:  # where the job runs elsewhere (a Ray task)
            cancel()

    def observe(self, event: Event) -> None:
        """Add a finished request's usage to the job's (a bus handler)."""
        if isinstance(event, RequestFinished):
            self.usage = self.usage + event.usage


@dataclass(frozen=True, slots=True)
class JobRun:
    """A finished job: its result line (without the export's path) and its session tree's export."""

    record: dict[str, Any]
    export: str | None = None


async def run_job(
    job: Job,
    source: RepoSource,
    options: JobOptions,
    handle: JobHandle,
    hooks: Callable[[], Sequence[Hook]] = tuple,
) -> JobRun:
    """Run ``job`` in a checkout of its own and return its result; never raises but for cancellation.

    ``hooks`` makes the hooks every agent of the job's tree gets (the batch's budget).
    """
    started = time.time()
    folder = Path(tempfile.mkdtemp(prefix=f"nestor-job-{job.id[:40]}-"))
    record: dict[str, Any] = {"id": job.id, "repo": job.repo, "ref": job.ref, "host": os.uname().nodename}
    export: str | None = None
    try:
        work_tree, commit = await make_checkout(source, folder)
        record["base_commit"] = commit
        if job.setup is not None and not handle.stopped:
            await _setup(job.setup, work_tree)
        if handle.stopped:
            record |= {"status": "cancelled", "stop_reason": "cancelled"}
        else:
            export = await _run_agent(job, work_tree, options, handle, hooks, record)
        try:
            changes = await patch(work_tree, commit)
            record |= {"patch": changes.diff, "files_changed": list(changes.files)}
        except CopyError as error:  # the run's outcome stands; what it changed is unknown
            record |= {"patch": None, "files_changed": None, "patch_error": error.message}
    except NestorError as error:
        record |= error_fields(error)
    except Exception as error:  # a bug must cost one job, not the batch: it is recorded
        record |= {"status": "error", "stop_reason": "error", "error": f"{type(error).__name__}: {error}"}
    finally:
        if options.keep:
            record["checkout"] = str(folder / "repo")
        else:
            await asyncio.to_thread(shutil.rmtree, folder, True)
    usage = handle.usage if "usage" not in record else Usage.from_dict(record["usage"])
    record |= {
        "usage": usage.to_dict(),
        "tokens": usage.total_tokens,
        "cost_usd": usage.cost_usd,
        "duration_s": round(time.time() - started, 3),
        "started_at": started,
    }
    return JobRun(record, export)


async def _run_agent(
    job: Job,
    work_tree: Path,
    options: JobOptions,
    handle: JobHandle,
    hooks: Callable[[], Sequence[Hook]],
    record: dict[str, Any],
) -> str | None:
    """The agent tree on the job's prompt; fills ``record``'s outcome; returns the session tree's export."""
    from nestor.app import App
    from nestor.app.session_files import export_tree_json

    app = App.open(_settings(job, work_tree, options), notify=lambda _message: None)
    try:
        unsubscribe = app.subscribe(handle.observe)
        conversation = await app.conversation(
            interactive=False,
            first_prompt=job.prompt,
            env=options.env,
            hooks=hooks(),
            subagent_hooks=hooks,
            agent_type=job.agent,
        )
        handle.conversation = conversation
        if handle.stopped:  # stopped while the agent was built: its prompt is never sent
            record |= {"status": "cancelled", "stop_reason": "cancelled"}
            return None
        outcome, usage, turns, stopped_between = await _ask_in_turn(conversation, job.prompts, handle)
        unsubscribe()
        # Stopped between two prompts: cancelled, so that a resumed batch asks them all again.
        stop_reason = "cancelled" if stopped_between else outcome.stop_reason
        record |= {
            "status": status_of(stop_reason, outcome.is_error),
            "stop_reason": stop_reason,
            "answer": outcome.text,
            "num_turns": turns,
            "model": outcome.model,
            "usage": usage.to_dict(),
            "session_id": outcome.session_id,
        }
        if outcome.is_error:
            record["error"] = outcome.text + (f" ({outcome.hint})" if outcome.hint else "")
        return export_tree_json(app.database, app.sessions, outcome.session_id)
    finally:
        handle.conversation = None
        await app.aclose()


async def _ask_in_turn(
    conversation: Conversation, prompts: Sequence[str], handle: JobHandle
) -> tuple[Outcome, Usage, int, bool]:
    """Ask each prompt in turn in one session.

    Returns the last outcome, the usage and turns of them all, and whether the job was stopped
    (:meth:`JobHandle.stop`) before a prompt was asked. A prompt that ends in an error or is
    cancelled ends the job there, in that outcome.
    """
    outcome = await conversation.run_to_completion(prompts[0])
    usage, turns = outcome.usage, outcome.num_turns
    for prompt in prompts[1:]:
        if status_of(outcome.stop_reason, outcome.is_error) in ("failed", "cancelled"):
            break
        if handle.stopped:
            return outcome, usage, turns, True
        outcome = await conversation.run_to_completion(prompt)
        usage, turns = usage + outcome.usage, turns + outcome.num_turns
    return outcome, usage, turns, False


def error_fields(error: NestorError) -> dict[str, Any]:
    """The fields of a job that could not run: its status, and the error's line and hint."""
    message = error.message + (f" ({error.hint})" if error.hint else "")
    return {"status": "error", "stop_reason": "error", "error": message}


def unstarted_record(job: Job, error: NestorError) -> dict[str, Any]:
    """The record of a job that failed before its checkout (its repository could not be packed)."""
    fields = {"id": job.id, "repo": job.repo, "ref": job.ref}
    return fields | error_fields(error) | {"tokens": 0, "cost_usd": None}


def status_of(stop_reason: str, is_error: bool) -> str:
    """A job's status from its run's end (see :data:`~nestor.app.batch.results.STATUSES`)."""
    if is_error or stop_reason in ("error", "refusal"):
        return "failed"
    if stop_reason == "cancelled":
        return "cancelled"
    if stop_reason in BUDGET_STOPS:
        return "stopped"
    return "done"


def _settings(job: Job, work_tree: Path, options: JobOptions) -> Any:
    from nestor.config.loading import CliOverrides, load_settings

    overrides = CliOverrides(
        model=job.model or options.model,
        yolo=options.yolo or None,
        max_iterations=job.budget.max_iterations,
        max_tokens=job.budget.max_tokens,
        max_time_s=job.budget.max_time_s,
    )
    settings = load_settings(work_tree, overrides=overrides, trusted=False)
    changes: dict[str, Any] = {}
    if options.data_dir is not None:
        changes["data_dir"] = options.data_dir
    if job.budget.max_cost_usd is not None:
        changes["agents"] = settings.agents.model_copy(update={"max_cost_usd": job.budget.max_cost_usd})
    return settings.model_copy(update=changes) if changes else settings


async def _setup(command: str, work_tree: Path) -> None:
    """Run the job's setup command in its checkout; a failure is the job's error."""
    process = await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        command,
        cwd=work_tree,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), SETUP_TIMEOUT_S)
    except TimeoutError:
        raise NestorError(f"the setup command did not finish in {SETUP_TIMEOUT_S:g} s") from None
    finally:
        if process.returncode is None:  # stopped at its time limit, or cancelled
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    if process.returncode != 0:
        tail = output.decode("utf-8", errors="replace").strip()[-_SETUP_TAIL:]
        raise NestorError(f"the setup command exited with {process.returncode}: {tail}")

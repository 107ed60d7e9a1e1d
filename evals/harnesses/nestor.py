"""nestor itself as a harness: ``nestor run --yolo -o json`` in the workspace, one process per task.

By default nestor runs the embedded model on the eval's GGUF file: its data dir's ``models``
directory is the one that holds the file (the runner joins it there) or a link to it, so the
gigabyte is not joined again, and a private user config sets the threads and the context window
the eval gives every harness. The
environment holds no provider key and a private home, so nothing of the user's own setup leaks in.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evals.harnesses.base import EvalContext, HarnessResult
from evals.processes import Finished, run_in_group, toolchain_homes
from evals.tasks import Task
from nestor.providers.local.weights import bundled_model_path

EXIT_OK = 0
EXIT_STOPPED = 3
"""``nestor run`` stopped by a budget (here: ``--max-time``); its answer still counts."""

SHUTDOWN_GRACE_S = 60.0
"""Time past the task's budget before the process is killed: loading the model, ending a turn."""

NESTOR_HOME_NAME = "nestor-home"
"""nestor's data dir (``NESTOR_HOME``) in the eval's work dir; the runner puts the model in its ``models``."""

USER_HOME_NAME = "nestor-user"
"""The ``HOME`` nestor runs with, inside the eval's work dir: holds its user config."""

_REMOVED_VARIABLES = ("HOME", "NESTOR_MODEL", "NESTOR_SMALL_MODEL", "NESTOR_HOME")
_REMOVED_SUFFIXES = ("_API_KEY", "_BASE_URL")


class NestorHarness:
    """Runs each task with ``python -m nestor run`` in the task's workspace.

    Attributes:
        name: ``nestor``.

    """

    name = "nestor"
    keeps_sessions = True
    """Follow-ups are asked in the same session (see :meth:`run`)."""

    def __init__(self, env: Mapping[str, str] | None = None, python: str = sys.executable) -> None:
        """Configure the harness.

        Args:
            env: Variables set last in nestor's environment, over the clean one: for example
                ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``NESTOR_MODEL`` to run a served model
                instead of the embedded one (a ``NESTOR_MODEL`` here replaces the embedded model).
            python: The interpreter that has nestor installed.

        """
        self._override = dict(env or {})
        self._python = python
        self._context: EvalContext | None = None
        self._env: dict[str, str] = {}

    def prepare(self, context: EvalContext) -> None:
        """Create nestor's private home, link its models directory and write its user config.

        Raises:
            RuntimeError: ``python -m nestor`` does not start (one line saying why).

        """
        home = context.work_dir / USER_HOME_NAME
        nestor_home = context.work_dir / NESTOR_HOME_NAME
        config_dir = home / ".config" / "nestor"
        config_dir.mkdir(parents=True, exist_ok=True)
        nestor_home.mkdir(parents=True, exist_ok=True)
        _link_models_dir(nestor_home / "models", context.model_path.parent)
        (config_dir / "config.toml").write_text(self._user_config(context), encoding="utf-8")
        self._env = _clean_environment(home, nestor_home) | self._override
        self._context = context
        version = run_in_group(
            [self._python, "-m", "nestor", "--version"], cwd=home, env=self._env, timeout_s=60
        )
        if version.returncode != 0:
            raise RuntimeError(f"{self._python} -m nestor does not start: {_last_line(version.stderr)}")

    def run(self, task: Task, workspace: Path) -> HarnessResult:
        """Run ``task`` to completion (or to its time budget) and read the JSON result.

        Each follow-up is asked in the same session, with ``nestor run --continue``; the seconds
        and tokens of every run add up, and the last answer counts.
        """
        if self._context is None:
            raise RuntimeError("NestorHarness.run called before prepare")
        seconds = 0.0
        tokens: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}
        answer, error, log = "", None, None
        for turn, prompt in enumerate(task.prompts):
            command = [
                *(self._python, "-m", "nestor", "run", "--yolo", "-o", "json"),
                *(("--continue",) if turn else ()),
                *("--max-time", f"{task.timeout_s:g}", "--", prompt),
            ]
            finished = run_in_group(
                command, cwd=workspace, env=self._env, timeout_s=task.timeout_s + SHUTDOWN_GRACE_S
            )
            suffix = f"-{turn + 1}" if turn else ""
            log = self._context.work_dir / "logs" / self.name / f"{task.id}{suffix}.log"
            _write_log(log, command, finished)
            outcome = _result_object(finished.stdout)
            usage: dict[str, Any] = (outcome or {}).get("usage") or {}
            answer = str((outcome or {}).get("result") or "")
            # Up to the answer: the process may then wait a few seconds for the session's title.
            seconds += finished.first_line_s if finished.first_line_s is not None else finished.seconds
            for key in tokens:
                tokens[key] += int(usage.get(key) or 0)
            error = _error(finished, outcome, task.timeout_s)
            if error is not None:
                break
        return HarnessResult(
            answer=answer,
            seconds=seconds,
            input_tokens=tokens["input_tokens"],
            output_tokens=tokens["output_tokens"],
            error=error,
            log=log,
        )

    def close(self) -> None:
        """Nothing to stop: each run is its own process, gone when it ends."""

    def _user_config(self, context: EvalContext) -> str:
        lines = ["[local]", f"threads = {context.threads}"]
        if "NESTOR_MODEL" not in self._override:
            bundled = context.model_path.name == bundled_model_path(Path()).name
            model = "local" if bundled else f"local:{context.model_path}"
            lines += [
                "",
                "[models.large]",
                f"model = {json.dumps(model)}",
                f"context_window = {context.context_window}",
            ]
        return "\n".join(lines) + "\n"


def _link_models_dir(link: Path, target: Path) -> None:
    """Make ``link`` lead to ``target``: a symlink, unless it already is that very directory."""
    if link.is_symlink():
        if link.resolve() == target.resolve():
            return
        link.unlink()
    elif link.exists():
        if link.resolve() == target.resolve():
            return
        raise RuntimeError(f"{link} exists and is not a link to the model's directory {target}; remove it")
    link.symlink_to(target.resolve(), target_is_directory=True)


def _clean_environment(home: Path, nestor_home: Path) -> dict[str, str]:
    """The environment of this process without provider keys or endpoints, with a private home."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _REMOVED_VARIABLES
        and not key.startswith("XDG_")
        and not key.endswith(_REMOVED_SUFFIXES)
    }
    return env | {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "NESTOR_HOME": str(nestor_home),
        "PYTHONUNBUFFERED": "1",
        **toolchain_homes(),  # rustup's toolchain, which the private HOME would hide
    }


def _result_object(stdout: str) -> dict[str, Any] | None:
    """The JSON object ``nestor run -o json`` printed, or None if there is none."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                parsed = json.loads(line)
            except ValueError:
                return None
            return parsed if isinstance(parsed, dict) else None
    return None


def _error(finished: Finished, outcome: dict[str, Any] | None, timeout_s: float) -> str | None:
    if finished.timed_out:
        return f"killed after {timeout_s + SHUTDOWN_GRACE_S:g} s (budget {timeout_s:g} s)"
    if finished.returncode not in (EXIT_OK, EXIT_STOPPED):
        return f"exit {finished.returncode}: {_last_line(finished.stderr)}"
    if outcome is None:
        return f"no JSON result on stdout (exit {finished.returncode}): {_last_line(finished.stderr)}"
    return None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def _write_log(path: Path, command: list[str], finished: Finished) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"$ {shlex.join(command)}\n"
        f"exit {finished.returncode} after {finished.seconds:.1f} s"
        f"{' (timed out)' if finished.timed_out else ''}\n"
        f"--- stdout ---\n{finished.stdout}\n--- stderr ---\n{finished.stderr}",
        encoding="utf-8",
    )

"""nestor itself as a harness: the tasks as one ``nestor batch --yolo`` run.

The jobs file and its results are made and read by :mod:`evals.batch`.

By default nestor runs the embedded model on the eval's GGUF file: its data dir's ``models``
directory is the one that holds the file (the runner joins it there) or a link to it, so the
gigabyte is not joined again, and a private user config sets the threads and the context window
the eval gives every harness. The
environment holds no provider key and a private home, so nothing of the user's own setup leaks in.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from evals.harnesses.base import EvalContext
from evals.processes import run_in_group, toolchain_homes
from nestor.providers.local.weights import bundled_model_path

STOP_GRACE_S = 120.0
"""Time the batch gets after an interrupt to cancel its running jobs and record them, before it is killed."""

NESTOR_HOME_NAME = "nestor-home"
"""nestor's data dir (``NESTOR_HOME``) in the eval's work dir; the runner puts the model in its ``models``."""

USER_HOME_NAME = "nestor-user"
"""The ``HOME`` nestor runs with, inside the eval's work dir: holds its user config."""

_STDERR_FD = 2
_REMOVED_VARIABLES = ("HOME", "NESTOR_MODEL", "NESTOR_SMALL_MODEL", "NESTOR_HOME")
_REMOVED_SUFFIXES = ("_API_KEY", "_BASE_URL")


class NestorHarness:
    """Runs the tasks' jobs file with ``python -m nestor batch`` in its private home and environment.

    Attributes:
        name: ``nestor``.

    """

    name = "nestor"

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

    def run_batch(self, jobs: Path, results: Path, *, workers: int, redo: bool = False) -> int:
        """Run ``nestor batch JOBS -o RESULTS`` to its end and return its exit code.

        Its progress display and summary go to this process's stderr (stdout stays the eval's
        rows). An interrupt (Ctrl-C, or SIGTERM made one by the eval) is passed on as SIGINT: the
        batch cancels its running jobs and records them (a resumed run does them again); then
        whatever is left of its process group is killed and the interrupt goes on.
        """
        if self._context is None:
            raise RuntimeError("NestorHarness.run_batch called before prepare")
        command = [
            *(self._python, "-m", "nestor", "batch", "run", str(jobs), "-o", str(results)),
            *("--yolo", "--workers", str(workers), *(("--redo",) if redo else ())),
        ]
        process = subprocess.Popen(
            command,
            cwd=self._context.work_dir / USER_HOME_NAME,
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=_STDERR_FD,  # its summary table, beside its progress display
            start_new_session=True,  # its tools' children go down with the group
        )
        try:
            return process.wait()
        except KeyboardInterrupt:
            _signal_group(process.pid, signal.SIGINT, only_leader=True)
            with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt):
                process.wait(timeout=STOP_GRACE_S)
            raise
        finally:
            _signal_group(process.pid, signal.SIGKILL)
            if process.poll() is None:
                process.wait()

    def close(self) -> None:
        """Nothing to stop: the batch is a process of its own, gone when it ends."""

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


def _signal_group(leader: int, signum: signal.Signals, *, only_leader: bool = False) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if only_leader:
            os.kill(leader, signum)
        else:
            os.killpg(leader, signum)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"

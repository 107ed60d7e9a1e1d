"""mini-swe-agent as a peer harness, on the shared llama-cpp-python server.

mini-swe-agent runs from its own venv (``<work_dir>/venvs/mini-swe-agent``) as its ``mini``
command, in yolo mode (``-y``: commands run unconfirmed), exiting as soon as the agent submits
(``--exit-immediately``), with a step limit of :data:`STEP_LIMIT` model calls, no cost limit and
cost tracking off (the local model has no price), talking to the server through litellm as
``openai/<alias>`` with the server's ``api_base``.

Config: mini-swe-agent's own ``mini_textbased.yaml`` with its ``litellm_textbased`` model class,
not the tool-calling ``mini.yaml``. The default config sends an OpenAI ``tools`` list and reads
``tool_calls`` from the response; llama-cpp-python's server renders the tools into Qwen's
template but returns whatever the model writes for a call as plain ``content`` (it parses tool
calls only for its built-in function-calling formats or a forced ``tool_choice``; tried on this
model: a ``bash`` call came back as a JSON block in ``content``, with no ``tool_calls``), so
every step would be a format error. The text-based config is the one mini-swe-agent ships for such models: the
model writes one command per reply in a fenced block. Everything else is the config's default,
except the sampling temperature, set to nestor's local default (:data:`TEMPERATURE`) because
mini-swe-agent sends none and the server's own default (0.8) would make this peer the only one
sampling that hot.

The answer comes from the trajectory file mini-swe-agent writes after every step: see
:func:`extract_mini_answer`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from evals.harnesses.base import EvalContext, HarnessResult
from evals.harnesses.llama_server import (
    KILL_GRACE_S,
    LlamaServer,
    acquire_server,
    ensure_venv,
    new_run_dir,
    peer_environment,
    release_server,
    write_run_log,
)
from evals.processes import run_in_group
from evals.tasks import Task

MINI_SWE_AGENT_VERSION = "2.4.6"
STEP_LIMIT = 30
TEMPERATURE = 0.2
CONFIG = "mini_textbased.yaml"
MODEL_CLASS = "litellm_textbased"
BUDGET_STOPS = frozenset({"LimitsExceeded", "TimeExceeded"})
"""Exit statuses of a run stopped by its step or time limit: not errors, the answer so far counts."""


class MiniSweAgentHarness:
    """Runs each task as one ``mini -y --exit-immediately -t <prompt>`` on the shared local model server."""

    name = "mini-swe-agent"

    def __init__(self) -> None:
        self._context: EvalContext | None = None
        self._server: LlamaServer | None = None
        self._mini: Path | None = None
        self._env: dict[str, str] = {}

    def prepare(self, context: EvalContext) -> None:
        """Install mini-swe-agent into its venv (once) and start or join the model server."""
        venv = context.work_dir / "venvs" / "mini-swe-agent"
        home = context.work_dir / "homes" / self.name
        self._env = peer_environment(
            venv,
            home=home,
            extra={
                "MSWEA_CONFIGURED": "true",  # skip the first-run setup questions
                # Importing minisweagent creates this directory; by default it is in the user's home.
                "MSWEA_GLOBAL_CONFIG_DIR": str(home / ".config" / "mini-swe-agent"),
                "MSWEA_COST_TRACKING": "ignore_errors",  # the local model has no price
                # litellm fetches its model price list from the network at import unless told not to.
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            },
        )
        bin_dir = ensure_venv(
            venv,
            [f"mini-swe-agent=={MINI_SWE_AGENT_VERSION}"],
            check=("mini-swe-agent", MINI_SWE_AGENT_VERSION),
            import_check="import minisweagent.run.mini",
            log=context.work_dir / "logs" / "mini-swe-agent-install.log",
            probe_env=self._env,
        )
        self._mini = bin_dir / "mini"
        self._context = context
        self._server = acquire_server(context)

    def run(self, task: Task, workspace: Path) -> HarnessResult:
        """Run mini-swe-agent on ``task.prompt`` in ``workspace`` until it submits or stops, or kill it.

        Its own wall-time limit is the task's budget, checked before each model call; past the
        budget plus :data:`KILL_GRACE_S` (one slow answer) it is killed, an error. Stopping at
        the step or time limit is not an error, like nestor stopping at its budget: the answer
        so far counts. Any other end without a submission (mini-swe-agent giving up after three
        format errors in a row, a crash) is one.
        """
        if self._context is None or self._server is None or self._mini is None:
            raise RuntimeError("MiniSweAgentHarness.run before prepare")
        context, server = self._context, self._server
        run_dir = new_run_dir(context.work_dir, self.name, task.id)
        trajectory = run_dir / "trajectory.json"
        command = mini_command(
            self._mini,
            model=server.litellm_model,
            api_base=server.base_url,
            prompt=task.prompt,
            workspace=workspace,
            trajectory=trajectory,
            time_limit_s=task.timeout_s,
        )
        server.reset_usage()
        log = run_dir / "output.log"
        limit = task.timeout_s + KILL_GRACE_S
        finished = run_in_group(command, cwd=workspace, env=self._env, timeout_s=limit)
        write_run_log(log, command, finished)
        usage = server.usage()
        server.settle()  # a run killed at its limit leaves the model generating
        data: dict[str, Any] | None = None
        if trajectory.exists():
            try:
                data = json.loads(trajectory.read_text(encoding="utf-8"))
            except ValueError:
                data = None
        answer, exit_status = extract_mini_answer(data) if data is not None else ("", "")
        error = None
        if finished.timed_out:
            error = f"killed after {limit:g} s (budget {task.timeout_s:g} s)"
        elif data is None:
            error = f"mini-swe-agent exited with code {finished.returncode} and left no trajectory"
        elif exit_status not in BUDGET_STOPS and exit_status != "Submitted":
            error = f"mini-swe-agent stopped without submitting: {exit_status or 'unknown'}"
        return HarnessResult(
            answer=answer,
            seconds=finished.seconds,
            input_tokens=usage.prompt_tokens if usage.exact else None,
            output_tokens=usage.completion_tokens,
            error=error,
            log=log,
        )

    def close(self) -> None:
        """Give back the model server (the last harness to close stops it)."""
        if self._server is not None:
            self._server = None
            release_server()


def mini_command(
    mini: Path,
    *,
    model: str,
    api_base: str,
    prompt: str,
    workspace: Path,
    trajectory: Path,
    time_limit_s: float,
) -> list[str]:
    """The ``mini`` command line for one headless task (see the module docstring for the choices)."""
    settings = {
        "agent.step_limit": STEP_LIMIT,
        "agent.wall_time_limit_seconds": int(time_limit_s),
        "agent.cost_limit": 0,  # 0 turns the limit off: the local model costs nothing
        "model.model_kwargs.api_base": api_base,
        "model.model_kwargs.api_key": "x",  # the local server takes any key; litellm insists on one
        "model.model_kwargs.temperature": TEMPERATURE,
        "model.cost_tracking": "ignore_errors",
        "environment.cwd": str(workspace),
    }
    return [
        str(mini),
        *("--model", model),
        *("--model-class", MODEL_CLASS),
        *("-c", CONFIG),
        *(item for key, value in settings.items() for item in ("-c", f"{key}={value}")),
        "--yolo",
        "--exit-immediately",
        *("--output", str(trajectory)),
        *("--task", prompt),
    ]


# The text-based config's action block, which the answer leaves out (it is the submit command).
_ACTION_BLOCK = re.compile(r"```mswea_bash_command\s*\n.*?\n```", re.DOTALL)
_THOUGHT_LABEL = re.compile(r"^\s*THOUGHT:\s*")


def extract_mini_answer(trajectory: dict[str, Any]) -> tuple[str, str]:
    """The answer and exit status recorded in a mini-swe-agent trajectory.

    The answer is the prose of the last assistant message that has any (its command block and
    the ``THOUGHT:`` label removed: on a submitted run that message explains what was done or
    found), followed by the submission (what the submit command printed after its marker line)
    when there is one.

    Returns:
        ``(answer, exit_status)``; the status is ``Submitted`` for a run that finished normally.

    """
    info: dict[str, Any] = trajectory.get("info") or {}
    exit_status = str(info.get("exit_status") or "")
    submission = str(info.get("submission") or "").strip()
    prose = ""
    for message in reversed(trajectory.get("messages") or []):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        text = _ACTION_BLOCK.sub("", _content_text(message.get("content"))).strip()
        text = _THOUGHT_LABEL.sub("", text).strip()
        if text:
            prose = text
            break
    answer = "\n\n".join(part for part in (prose, submission) if part)
    return answer, exit_status


def _content_text(content: Any) -> str:
    """A message's text, whether its content is a string or a list of OpenAI content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return ""

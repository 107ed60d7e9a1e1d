"""aider (``aider-chat``) as a peer harness, on the shared llama-cpp-python server.

aider runs from its own venv (``<work_dir>/venvs/aider``), headless: one ``--message``, every
question answered yes (so it adds the files it asks for, as a user would), no commits, no
``.gitignore`` change, and everything that reaches the network switched off: the update check,
analytics, URL scraping, and the download of litellm's model price list (aider's cache of it is
seeded with our model in the peer's own ``HOME``, and litellm reads its bundled copy,
``LITELLM_LOCAL_MODEL_COST_MAP``). A model metadata file gives the model's context window.

It gets aider's defaults otherwise: the ``whole`` edit format aider picks for a model it does not
know, temperature 0, and a repository map of ``context_window / 8`` tokens (aider's own rule,
between 1024 and 4096). No files are added up front: aider sees the repository map, asks for the
files it wants, and ``--yes-always`` adds them. Responses are not streamed, so the counting proxy
sees the server's exact usage.

The answer is what aider replied to the prompt, read from its chat history file (kept in the run's
log directory, not in the workspace): see :func:`extract_aider_answer`.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

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

AIDER_VERSION = "0.86.2"


class AiderHarness:
    """Runs each task as one headless ``aider --message`` on the shared local model server."""

    name = "aider"

    def __init__(self) -> None:
        self._context: EvalContext | None = None
        self._server: LlamaServer | None = None
        self._aider: Path | None = None
        self._home = Path()
        self._env: dict[str, str] = {}

    def prepare(self, context: EvalContext) -> None:
        """Install aider into its venv (once) and start or join the model server."""
        venv = context.work_dir / "venvs" / "aider"
        self._home = context.work_dir / "homes" / self.name
        # litellm fetches its model price list from the network at import unless told not to.
        self._env = peer_environment(venv, home=self._home, extra={"LITELLM_LOCAL_MODEL_COST_MAP": "True"})
        bin_dir = ensure_venv(
            venv,
            [f"aider-chat=={AIDER_VERSION}"],
            check=("aider-chat", AIDER_VERSION),
            import_check="import aider.main",
            log=context.work_dir / "logs" / "aider-install.log",
            probe_env=self._env,
        )
        self._aider = bin_dir / "aider"
        self._context = context
        self._server = acquire_server(context)

    def run(self, task: Task, workspace: Path) -> HarnessResult:
        """Run ``aider --message <prompt>`` in ``workspace`` until it exits, or kill it.

        aider has no time budget of its own, so it is killed (an error) at the limit every harness
        gets: ``task.timeout_s`` plus :data:`KILL_GRACE_S`.
        """
        if self._context is None or self._server is None or self._aider is None:
            raise RuntimeError("AiderHarness.run before prepare")
        context, server = self._context, self._server
        run_dir = new_run_dir(context.work_dir, self.name, task.id)
        model = server.litellm_model
        metadata = run_dir / "model-metadata.json"
        metadata.write_text(
            json.dumps(model_metadata(model, context.context_window), indent=2), encoding="utf-8"
        )
        _seed_model_info_cache(self._home, model, context.context_window)
        history = run_dir / "chat.history.md"
        command = aider_command(
            self._aider,
            model=model,
            api_base=server.base_url,
            prompt=task.prompt,
            metadata=metadata,
            run_dir=run_dir,
            map_tokens=repo_map_tokens(context.context_window),
            timeout_s=task.timeout_s,
        )
        tags_caches_before = set(workspace.glob(".aider.tags.cache.v*"))
        server.reset_usage()
        log = run_dir / "output.log"
        limit = task.timeout_s + KILL_GRACE_S
        finished = run_in_group(command, cwd=workspace, env=self._env, timeout_s=limit)
        write_run_log(log, command, finished)
        usage = server.usage()
        server.settle()  # a run killed at its limit leaves the model generating
        # aider's repository-map cache is its own scratch, not a change the task made.
        for cache in set(workspace.glob(".aider.tags.cache.v*")) - tags_caches_before:
            shutil.rmtree(cache, ignore_errors=True)
        text = history.read_text(encoding="utf-8", errors="replace") if history.exists() else ""
        answer = extract_aider_answer(text)
        error = None
        if finished.timed_out:
            error = f"killed after {limit:g} s (budget {task.timeout_s:g} s)"
        elif finished.returncode != 0:
            error = f"aider exited with code {finished.returncode}"
        elif usage.requests == 0:
            error = "aider made no model request"
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


def aider_command(
    aider: Path,
    *,
    model: str,
    api_base: str,
    prompt: str,
    metadata: Path,
    run_dir: Path,
    map_tokens: int,
    timeout_s: float,
) -> list[str]:
    """The aider command line for one headless task (see the module docstring for the choices)."""
    return [
        str(aider),
        *("--model", model),
        *("--openai-api-base", api_base),
        *("--openai-api-key", "x"),  # the local server takes any key; aider insists on one
        *("--model-metadata-file", str(metadata)),
        *("--map-tokens", str(map_tokens)),
        *("--timeout", str(int(timeout_s))),
        # Histories go to the run's log directory: the workspace must hold only the task's changes.
        *("--chat-history-file", str(run_dir / "chat.history.md")),
        *("--input-history-file", str(run_dir / "input.history")),
        *("--llm-history-file", str(run_dir / "llm.history")),
        *("--env-file", str(run_dir / "no.env")),
        "--no-restore-chat-history",
        "--yes-always",
        "--no-auto-commits",
        "--no-dirty-commits",
        "--no-gitignore",
        "--no-check-update",
        "--no-analytics",
        "--analytics-disable",
        "--no-show-release-notes",
        "--no-show-model-warnings",
        "--no-check-model-accepts-settings",
        "--no-detect-urls",  # a URL in a prompt would be scraped from the network
        "--disable-playwright",
        "--no-pretty",
        "--no-fancy-input",
        "--no-stream",  # whole responses carry the server's usage
        "--no-notifications",
        *("--encoding", "utf-8"),
        *("--message", prompt),
    ]


def model_metadata(model: str, context_window: int) -> dict[str, dict[str, object]]:
    """The litellm model metadata for ``model``: its context window, free, an OpenAI-compatible chat model."""
    return {
        model: {
            "max_tokens": context_window,
            "max_input_tokens": context_window,
            "max_output_tokens": context_window,
            "input_cost_per_token": 0.0,
            "output_cost_per_token": 0.0,
            "litellm_provider": "openai",
            "mode": "chat",
        }
    }


def repo_map_tokens(context_window: int) -> int:
    """The map size aider itself picks for a model with this context: an eighth of it, within 1024..4096."""
    return int(min(max(context_window / 8, 1024), 4096))


def _seed_model_info_cache(home: Path, model: str, context_window: int) -> None:
    """Fill aider's model-info cache so it never downloads litellm's price list (a 24 h cache, kept fresh)."""
    cache = home / ".aider" / "caches" / "model_prices_and_context_window.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(model_metadata(model, context_window)), encoding="utf-8")


# aider's chat history is Markdown: user lines start with "#### ", its own output lines are block
# quotes ("> ..."), and both end in two spaces (a Markdown line break); assistant text is verbatim.
_USER_LINE = re.compile(r"^#### .*  $|^####  $")
_TOOL_LINE = re.compile(r"^>.*  $")
_SESSION_START = re.compile(r"^# aider chat started at ")


def extract_aider_answer(history: str) -> str:
    """The reply aider gave to the last prompt of the last session in its chat history file, or ``""``.

    Assistant text is what is neither a user line, nor one of aider's block-quoted output lines,
    nor the session header. One ``--message`` can get several replies: aider answers, adds the
    files the answer mentions (``--yes-always``) and has the model answer again with them. The
    user reads all of them as aider's answer, so all the replies after the last user prompt are
    joined, in order, with a blank line between them.
    """
    lines = history.splitlines()
    starts = [i for i, line in enumerate(lines) if _SESSION_START.match(line)]
    if starts:
        lines = lines[starts[-1] + 1 :]
    prompts = [i for i, line in enumerate(lines) if _USER_LINE.match(line)]
    if prompts:
        lines = lines[prompts[-1] + 1 :]
    replies: list[str] = []
    current: list[str] = []
    for line in [*lines, "> end  "]:  # a last output line closes the last reply
        if _USER_LINE.match(line) or _TOOL_LINE.match(line):
            if text := "\n".join(current).strip():
                replies.append(text)
            current = []
        else:
            current.append(line)
    return "\n\n".join(replies)

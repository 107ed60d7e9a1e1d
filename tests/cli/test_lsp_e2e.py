"""Language servers from ``nestor run``: pylsp found on PATH; pygls loaded only for a language file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import git_repo, openai_env
from tests.tools.lsp.conftest import HELPERS, USES, pylsp_bin

pytestmark = pytest.mark.timeout(120)
USER_CONFIG = "[lsp.pyright]\nenabled = false\n[lsp.basedpyright]\nenabled = false\n"
USER_CONFIG += "[lsp.pylsp]\ndiagnostics_timeout_s = 20\n"


RUN = ("run", "--trust", "--yolo", "--model", "openai-chat:gpt-4o", "go")


def run_one_call(
    call: ServerToolCall, repo: Path, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """``nestor run`` (under ``-X importtime``: stderr lists every module imported) where the model
    makes ``call`` and then answers "Done."; what it printed, and the requests the model got."""
    with ScriptedOpenAIServer([ServerReply(tool_calls=(call,)), ServerReply(text="Done.")]) as server:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "nestor", *RUN],
            cwd=repo,
            env=env_with_pylsp(tmp_path, server),
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "Done."
    return done, server.requests


def imported(stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")
    }


def tool_results(body: dict[str, Any]) -> list[str]:
    return [message["content"] for message in body["messages"] if message["role"] == "tool"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(
        tmp_path / "repo",
        {"pyproject.toml": '[project]\nname = "demo"\n', "helpers.py": HELPERS, "uses.py": USES},
    )


def env_with_pylsp(tmp_path: Path, server: ScriptedOpenAIServer) -> dict[str, str]:
    env = openai_env(tmp_path, server)
    env["PATH"] = f"{pylsp_bin(tmp_path / 'bin')}{os.pathsep}{env.get('PATH', '')}"
    config = Path(env["XDG_CONFIG_HOME"]) / "nestor" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(USER_CONFIG, encoding="utf-8")
    return env


def test_a_run_that_touches_no_language_file_starts_no_server_and_imports_no_pygls(
    repo: Path, tmp_path: Path
) -> None:
    done, requests = run_one_call(
        ServerToolCall("write", {"path": "notes.txt", "content": "hello\n"}), repo, tmp_path
    )
    # pylsp serves the project, so the model has the language tools; nothing started it.
    assert "references" in [tool["function"]["name"] for tool in requests[0]["tools"]]
    assert not {module for module in imported(done.stderr) if module.split(".")[0] in ("pygls", "lsprotocol")}
    assert tool_results(requests[1]) == ["Created notes.txt (6 bytes, 1 lines)."]


def test_an_edit_that_breaks_a_python_file_reports_it_through_pylsp_on_path(
    repo: Path, tmp_path: Path
) -> None:
    edit = {"path": "uses.py", "old_string": "value = helper(3)", "new_string": "value = helpr(3)"}
    done, requests = run_one_call(ServerToolCall("edit", edit), repo, tmp_path)
    [result] = tool_results(requests[1])
    assert "uses.py:3:9: error: undefined name 'helpr' (pyflakes)" in result
    assert "pygls" in imported(done.stderr)
    log = tmp_path / "home" / "nestor-data" / "lsp" / "logs" / "pylsp.log"
    assert log.exists()  # its stderr went there

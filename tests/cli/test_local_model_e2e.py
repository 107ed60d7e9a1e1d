"""The README's promise, on the real embedded model: no API key, and nestor still answers by looking.

This is the one test that runs the real Qwen2.5-Coder-1.5B GGUF (greedy, one thread), as CI does
after ``make test`` installed ``nestor[local]``. It fails when the engine is missing, unless
``NESTOR_SKIP_REAL_MODEL=1`` says this machine cannot run it.
"""

from __future__ import annotations

import json
import os
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.cli.support import clean_env, git_repo, nestor, nestor_json

pytestmark = pytest.mark.timeout(1500)

CALC = "def add(a, b):\n    return a - b\n\n\ndef multiply(a, b):\n    return a * b\n"
QUESTION = (
    "Use grep to find where the function add is defined in this repository, then tell me what it returns."
)


@pytest.fixture
def real_model() -> None:
    if os.environ.get("NESTOR_SKIP_REAL_MODEL") == "1":
        pytest.skip("NESTOR_SKIP_REAL_MODEL=1")
    assert find_spec("llama_cpp") is not None, "the [local] extra is not installed: run make install-dev"


@pytest.mark.usefixtures("real_model")
def test_without_a_key_the_embedded_model_answers_by_calling_a_tool(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"calc.py": CALC, "README.md": "# calc\nA tiny calculator.\n"})
    (repo / "nestor.toml").write_text(
        '[models.large]\nmodel = "local"\ntemperature = 0.0\nmax_tokens = 256\n\n[local]\nthreads = 1\n',
        encoding="utf-8",
    )
    env = clean_env(tmp_path / "home")  # no provider key at all

    done = nestor(["run", "--trust", "-o", "json", QUESTION], cwd=repo, env=env, timeout=1400)

    assert done.returncode == 0, done.stderr
    assert "embedded model ready" in done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["is_error"] is False and outcome["stop_reason"] == "completed"
    assert outcome["usage"]["input_tokens"] > 0 and outcome["cost_usd"] is None
    shown = nestor_json(["sessions", "show", outcome["session_id"], "--json"], cwd=repo, env=env)
    assert shown["session"]["model"] == "local:qwen2.5-coder-1.5b-instruct-q4_k_m"
    parts = [part for message in shown["messages"] for part in message["message"]["parts"]]
    calls = [part for part in parts if part["part_kind"] == "tool-call"]
    results = [part for part in parts if part["part_kind"] == "tool-return"]
    assert calls and calls[0]["tool_name"] in ("grep", "view")
    assert any("calc.py" in str(result["content"]) for result in results)
    assert outcome["result"].strip()


@pytest.mark.usefixtures("real_model")
def test_the_embedded_model_delegates_to_the_explore_agent_which_uses_a_tool(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"calc.py": CALC, "README.md": "# calc\nA tiny calculator.\n"})
    (repo / "nestor.toml").write_text(
        '[models.large]\nmodel = "local"\ntemperature = 0.0\nmax_tokens = 256\n\n[local]\nthreads = 2\n\n'
        "[agents]\nmax_turns = 2\n",
        encoding="utf-8",
    )
    env = clean_env(tmp_path / "home")

    done = nestor(
        [
            "run",
            "--trust",
            "-o",
            "json",
            "Use the explore agent to find where the function add is defined, and what it returns.",
        ],
        cwd=repo,
        env=env,
        timeout=1400,
    )

    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    tree = nestor_json(["sessions", "show", outcome["session_id"], "--json"], cwd=repo, env=env)
    parts = [part for message in tree["messages"] for part in message["message"]["parts"]]
    assert [part["tool_name"] for part in parts if part["part_kind"] == "tool-call"] == ["task"]
    [result] = [part for part in parts if part["part_kind"] == "tool-return" and part["tool_name"] == "task"]
    child_id = result["metadata"]["subagent"]["agent_id"]
    child = nestor_json(["sessions", "show", child_id, "--json"], cwd=repo, env=env)
    assert child["session"]["agent_name"] == "explore"
    assert child["session"]["parent_id"] == outcome["session_id"]
    child_parts = [part for message in child["messages"] for part in message["message"]["parts"]]
    assert any(part["part_kind"] == "tool-call" for part in child_parts)
    # The sub-agent's tokens are part of the run's totals.
    assert outcome["usage"]["input_tokens"] > outcome["main_usage"]["input_tokens"]

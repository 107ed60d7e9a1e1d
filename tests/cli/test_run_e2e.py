"""``nestor run`` end to end: a real subprocess, the real openai provider, a scripted loopback server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, ServerUsage
from tests.cli.support import clean_env, git_repo, nestor, nestor_json, openai_env
from tests.processes import find_command, is_running, wait_for_group_to_die

BUGGY = "def add(a, b):\n    return a - b\n\nprint(add(2, 3))\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo", {"calc.py": BUGGY, "README.md": "# calc\n"})


def fix_script() -> list[ServerReply]:
    return [
        ServerReply(
            text="Let me look.",
            tool_calls=(
                ServerToolCall("view", {"path": "calc.py"}),
                ServerToolCall("grep", {"pattern": "return", "include": "*.py"}),
            ),
            usage=ServerUsage(prompt_tokens=1000, completion_tokens=50),
            args_chunks=3,
        ),
        ServerReply(
            tool_calls=(
                ServerToolCall("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
            ),
            usage=ServerUsage(prompt_tokens=1200, completion_tokens=40, cached_tokens=800),
        ),
        ServerReply(
            tool_calls=(ServerToolCall("bash", {"command": "python3 calc.py"}),),
            usage=ServerUsage(prompt_tokens=1300, completion_tokens=30),
        ),
        ServerReply(
            text="Fixed: `add` now adds. Running it prints 5.",
            chunks=4,
            usage=ServerUsage(prompt_tokens=1400, completion_tokens=20),
        ),
    ]


def test_run_reads_edits_and_runs_a_command_then_sessions_show_has_it_all(repo: Path, tmp_path: Path) -> None:
    with ScriptedOpenAIServer(fix_script()) as server:
        env = openai_env(tmp_path, server)
        done = nestor(
            ["run", "--yolo", "-o", "json", "--model", "openai-chat:gpt-4o", "fix the add function"],
            cwd=repo,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        outcome = json.loads(done.stdout)
        requests = server.requests
    assert (repo / "calc.py").read_text() == BUGGY.replace("a - b", "a + b")
    assert outcome["result"] == "Fixed: `add` now adds. Running it prints 5."
    assert outcome["is_error"] is False and outcome["stop_reason"] == "completed"
    assert outcome["num_turns"] == 4
    assert outcome["usage"]["input_tokens"] == 4900 and outcome["usage"]["output_tokens"] == 140
    assert outcome["usage"]["cache_read_tokens"] == 800
    assert outcome["cost_usd"] is not None and outcome["cost_usd"] > 0  # gpt-4o has a known price

    # The model saw the tool results: the file, the grep hit, the edit and the command output.
    # requests[4], after the run, is the new session's title request.
    tool_messages = [m for m in requests[3]["messages"] if m["role"] == "tool"]
    contents = "\n".join(str(m["content"]) for m in tool_messages)
    assert "return a - b" in contents and "calc.py" in contents and "5" in contents
    system = requests[0]["messages"][0]
    assert system["role"] == "system" and str(repo) in system["content"]
    assert {tool["function"]["name"] for tool in requests[0]["tools"]} >= {"view", "edit", "bash", "grep"}

    shown = nestor_json(["sessions", "show", outcome["session_id"], "--json"], cwd=repo, env=env)
    assert shown["session"]["id"] == outcome["session_id"]
    assert shown["session"]["usage"]["input_tokens"] == 4900
    assert shown["session"]["cost_usd"] == pytest.approx(outcome["cost_usd"])
    kinds = [m["kind"] for m in shown["messages"]]
    assert kinds == ["request", "response"] * 4
    assert all(m["usage"] is not None for m in shown["messages"] if m["kind"] == "response")
    listed = nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)
    assert [s["id"] for s in listed] == [outcome["session_id"]]


def test_stream_json_prints_one_event_per_line_as_it_happens(repo: Path, tmp_path: Path) -> None:
    script = [
        ServerReply(tool_calls=(ServerToolCall("ls", {}),)),
        ServerReply(text="Two files.", chunks=3),
    ]
    with ScriptedOpenAIServer(script) as server:
        done = nestor(
            ["run", "-o", "stream-json", "--model", "openai-chat:gpt-4o", "what is here?"],
            cwd=repo,
            env=openai_env(tmp_path, server),
        )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    types = [line["type"] for line in lines]
    assert types[0] == "agent_started" and types[-2] == "agent_finished" and types[-1] == "result"
    assert "tool_started" in types and "tool_finished" in types and "text_delta" in types
    assert types.index("tool_started") < types.index("tool_finished") < types.index("agent_finished")
    assert "".join(line["text"] for line in lines if line["type"] == "text_delta") == "Two files."
    assert all(line["agent_id"] == lines[0]["agent_id"] for line in lines[:-1])


def test_headless_run_denies_what_would_ask_and_the_model_is_told(repo: Path, tmp_path: Path) -> None:
    script = [
        ServerReply(tool_calls=(ServerToolCall("bash", {"command": "touch pwned"}),)),
        ServerReply(text="I could not run it."),
    ]
    with ScriptedOpenAIServer(script) as server:
        done = nestor(
            ["run", "--model", "openai-chat:gpt-4o", "run touch"], cwd=repo, env=openai_env(tmp_path, server)
        )
        denied = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "I could not run it."
    assert not (repo / "pwned").exists()
    assert "Permission denied" in denied and "--yolo" in denied


def test_under_yolo_an_ask_rule_still_holds_in_a_headless_run(repo: Path, tmp_path: Path) -> None:
    (repo / "nestor.toml").write_text('[permissions]\nask = ["bash(touch *)"]\n')
    script = [
        ServerReply(
            tool_calls=(
                ServerToolCall("bash", {"command": "touch asked"}),
                ServerToolCall("bash", {"command": "mkdir made"}),
            )
        ),
        ServerReply(text="done"),
    ]
    with ScriptedOpenAIServer(script) as server:
        done = nestor(
            ["run", "--yolo", "--trust", "--model", "openai-chat:gpt-4o", "go"],
            cwd=repo,
            env=openai_env(tmp_path, server),
        )
        results = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert done.returncode == 0, done.stderr
    assert not (repo / "asked").exists() and (repo / "made").is_dir()  # --yolo allowed the other one
    assert "rule ask bash(touch *)" in results[0] and "--yolo does not override ask rules" in results[0]


def test_allow_rule_in_project_config_lets_a_headless_run_act(repo: Path, tmp_path: Path) -> None:
    (repo / "nestor.toml").write_text('[permissions]\nallow = ["bash(touch *)"]\n')
    script = [
        ServerReply(tool_calls=(ServerToolCall("bash", {"command": "touch allowed"}),)),
        ServerReply(text="done"),
    ]
    with ScriptedOpenAIServer(script) as server:
        done = nestor(
            ["run", "--trust", "--model", "openai-chat:gpt-4o", "touch"],
            cwd=repo,
            env=openai_env(tmp_path, server),
        )
    assert done.returncode == 0, done.stderr
    assert (repo / "allowed").exists()


def test_named_openai_compatible_provider_reports_null_cost(repo: Path, tmp_path: Path) -> None:
    script = [ServerReply(text="hello", usage=ServerUsage(prompt_tokens=10, completion_tokens=2))]
    with ScriptedOpenAIServer(script) as server:
        (repo / "nestor.toml").write_text(
            f'[models]\nlarge = "local-vllm:qwen-coder"\n\n'
            f'[providers.local-vllm]\ntype = "openai"\nbase_url = "{server.base_url}"\n'
        )
        outcome = nestor_json(
            ["run", "--trust", "-o", "json", "hi"], cwd=repo, env=clean_env(tmp_path / "home")
        )
        assert server.requests[0]["model"] == "qwen-coder"
    assert outcome["result"] == "hello"
    assert outcome["usage"]["input_tokens"] == 10
    assert outcome["cost_usd"] is None


def test_continue_and_resume_carry_the_conversation_on(repo: Path, tmp_path: Path) -> None:
    # The first run of a new session is followed by its title request.
    script = [
        ServerReply(text="first"),
        ServerReply(text="Counting"),
        ServerReply(text="second"),
        ServerReply(text="third"),
    ]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        base = ["run", "-o", "json", "--model", "openai-chat:gpt-4o"]
        first = nestor_json([*base, "one"], cwd=repo, env=env)
        second = nestor_json([*base, "--continue", "two"], cwd=repo, env=env)
        third = nestor_json([*base, "--resume", first["session_id"][:12], "three"], cwd=repo, env=env)
        last_request = server.requests[-1]["messages"]
    assert first["session_id"] == second["session_id"] == third["session_id"]
    user_turns = [m["content"] for m in last_request if m["role"] == "user"]
    assert user_turns == ["one", "two", "three"]
    assert [m["content"] for m in last_request if m["role"] == "assistant"] == ["first", "second"]


def _started_then_sleep(started: Path, token: str) -> str:
    """A command that marks it started, then sleeps long enough to be found by ``sleep TOKEN``."""
    return f"echo started > {started}; sleep {token}"


def test_sigkill_mid_run_loses_nothing_completed_and_the_session_resumes(
    repo: Path, tmp_path: Path, cleanup_pids: list[int]
) -> None:
    started, token = tmp_path / "started", f"120.{os.getpid()}9"
    script: list[Any] = [
        ServerReply(tool_calls=(ServerToolCall("view", {"path": "calc.py"}),)),
        ServerReply(tool_calls=(ServerToolCall("grep", {"pattern": "add"}),)),
        ServerReply(
            tool_calls=(ServerToolCall("bash", {"command": f"echo started > {started}; sleep {token}"}),)
        ),
        ServerReply(text="Resumed after the crash."),
    ]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        process = subprocess.Popen(
            [sys.executable, "-m", "nestor", "run", "--yolo", "--model", "openai-chat:gpt-4o", "investigate"],
            cwd=repo,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        sleep = find_command(["sleep", token], started, lambda: process.poll() is None)
        cleanup_pids.append(os.getpgid(sleep))
        process.kill()
        process.wait(timeout=10)

        listed = nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)
        assert len(listed) == 1
        session_id = listed[0]["id"]
        shown = nestor_json(["sessions", "show", session_id, "--json"], cwd=repo, env=env)
        # prompt, view call, view result, grep call, grep result, bash call: every completed message.
        assert [m["kind"] for m in shown["messages"]] == ["request", "response"] * 3
        assert shown["session"]["usage"]["requests"] == 3

        resumed = nestor_json(
            ["run", "-o", "json", "--model", "openai-chat:gpt-4o", "--resume", session_id, "carry on"],
            cwd=repo,
            env=env,
        )
        sent = server.requests[-1]["messages"]
    assert resumed["result"] == "Resumed after the crash."
    bash_result = [m for m in sent if m["role"] == "tool"][-1]
    assert "Interrupted" in bash_result["content"]
    assert sent[-1] == {"role": "user", "content": "carry on"}
    final = nestor_json(["sessions", "show", session_id, "--json"], cwd=repo, env=env)
    assert len(final["messages"]) == 6 + 3  # repair, prompt, answer


def test_ctrl_c_cancels_the_turn_kills_the_command_and_keeps_history(
    repo: Path, tmp_path: Path, cleanup_pids: list[int]
) -> None:
    # The sleep is found on the host by its command line: inside the sandbox the shell's $$ is a
    # pid of its own namespace, and checking that number on the host checked nothing.
    started, token = tmp_path / "started", f"120.{os.getpid()}7"
    script = [
        ServerReply(
            tool_calls=(ServerToolCall("bash", {"command": f"echo started > {started}; sleep {token}"}),)
        )
    ]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nestor",
                "run",
                "-o",
                "json",
                "--yolo",
                "--model",
                "openai-chat:gpt-4o",
                "wait",
            ],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        sleep = find_command(["sleep", token], started, lambda: process.poll() is None)
        group = os.getpgid(sleep)
        cleanup_pids.append(group)
        process.send_signal(signal.SIGINT)
        stdout, _stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    outcome = json.loads(stdout.splitlines()[-1])
    assert outcome["stop_reason"] == "cancelled" and outcome["is_error"] is False
    assert wait_for_group_to_die(group) == [] and not is_running(sleep)  # the command's group is gone
    shown = nestor_json(["sessions", "show", outcome["session_id"], "--json"], cwd=repo, env=env)
    last = shown["messages"][-1]["message"]["parts"][0]
    assert last["part_kind"] == "tool-return" and last["outcome"] == "interrupted"
    assert shown["session"]["status"] == "cancelled"


def test_run_compacts_a_long_session_and_sessions_show_marks_it(repo: Path, tmp_path: Path) -> None:
    (repo / "nestor.toml").write_text(
        '[models.large]\nmodel = "openai-chat:gpt-4o"\ncontext_window = 4000\n', encoding="utf-8"
    )
    script = [
        ServerReply(
            tool_calls=(ServerToolCall("view", {"path": "calc.py"}),),
            usage=ServerUsage(prompt_tokens=3_500, completion_tokens=20),
        ),
        ServerReply(text="## Goal\nFix add() in calc.py. SUMMARY-E2E", usage=ServerUsage(2_000, 60)),
        ServerReply(text="add() subtracts; it should add.", usage=ServerUsage(900, 15)),
        ServerReply(text="Fixing calc add"),  # the new session's title
    ]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        outcome = nestor_json(["run", "--trust", "-o", "json", "why is calc wrong?"], cwd=repo, env=env)
        requests = server.requests
    assert outcome["result"] == "add() subtracts; it should add." and outcome["is_error"] is False
    # The request after the view result passed 85% of 4,000 tokens: the large model summarised first.
    assert "Summarise the transcript above" in requests[1]["messages"][-1]["content"]
    assert "why is calc wrong?" in requests[1]["messages"][-1]["content"]
    continued = requests[2]["messages"]
    assert [m["role"] for m in continued] == ["system", "user", "assistant", "tool"]
    assert "SUMMARY-E2E" in continued[1]["content"] and "return a - b" in continued[3]["content"]
    assert outcome["usage"]["input_tokens"] == 3_500 + 2_000 + 900  # the summary is paid for too

    shown = nestor(["sessions", "show", outcome["session_id"]], cwd=repo, env=env)
    assert "## context compacted (threshold: 1 message summarised" in shown.stdout
    assert "SUMMARY-E2E" in shown.stdout
    exported = nestor_json(["sessions", "show", outcome["session_id"], "--json"], cwd=repo, env=env)
    assert [m["compaction"] is not None for m in exported["messages"]] == [False] * 3 + [True, False]


def test_an_empty_reply_is_asked_again_then_fails_with_exit_1(repo: Path, tmp_path: Path) -> None:
    with ScriptedOpenAIServer([ServerReply(text=""), ServerReply(text="")]) as server:
        done = nestor(
            ["run", "--model", "openai-chat:gpt-4o", "say something"],
            cwd=repo,
            env=openai_env(tmp_path, server),
        )
    assert done.returncode == 1
    assert done.stdout == ""
    assert "error: the model openai-chat:gpt-4o returned an empty reply twice" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_refusal_ends_the_run_with_stop_reason_refusal_and_exit_4(repo: Path, tmp_path: Path) -> None:
    refusal = "I'm sorry, I can't help with that."
    title = ServerReply(text="A title")
    runs: list[subprocess.CompletedProcess[str]] = []
    for reply, output in (
        (ServerReply(refusal=refusal), "json"),
        (ServerReply(finish_reason="content_filter"), "text"),
    ):
        with ScriptedOpenAIServer([reply, title]) as server:
            env = openai_env(tmp_path, server)
            runs.append(
                nestor(["run", "--model", "openai-chat:gpt-4o", "-o", output, "something"], cwd=repo, env=env)
            )
    refused, filtered = runs
    assert refused.returncode == 4, refused.stderr
    outcome = json.loads(refused.stdout)
    assert outcome["stop_reason"] == "refusal" and outcome["is_error"] is False
    assert outcome["result"].startswith(refusal + "\n\n[The model refused to answer")
    assert filtered.returncode == 4 and "Traceback" not in filtered.stderr
    assert filtered.stdout.startswith("[The model refused to answer (its provider reported a refusal")


def test_a_stream_that_stalls_twice_fails_with_one_line_naming_the_setting(
    repo: Path, tmp_path: Path
) -> None:
    stall = ServerReply(text="an answer that never ends", chunks=5, stall_after_chunks=2)
    with ScriptedOpenAIServer([stall, stall]) as server:
        env = openai_env(tmp_path, server)
        config = Path(env["XDG_CONFIG_HOME"]) / "nestor" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("[limits]\nstream_idle_timeout_s = 0.5\n")
        done = nestor(["run", "--model", "openai-chat:gpt-4o", "say something"], cwd=repo, env=env)
        requests = len(server.requests)
    assert done.returncode == 1 and requests == 2
    assert "error: the stream from openai:gpt-4o sent no data for 0.5 s, twice" in done.stderr
    assert "stream_idle_timeout_s" in done.stderr and "Traceback" not in done.stderr

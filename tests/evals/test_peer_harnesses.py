"""The peer harnesses without a model or their venvs: the counting proxy, command lines, answer extraction."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from evals.harnesses import llama_server
from evals.harnesses.aider import aider_command, extract_aider_answer, model_metadata, repo_map_tokens
from evals.harnesses.base import EvalContext
from evals.harnesses.llama_server import (
    LlamaServer,
    Usage,
    UsageProxy,
    acquire_server,
    new_run_dir,
    peer_environment,
    release_server,
)
from evals.harnesses.mini_swe_agent import STEP_LIMIT, extract_mini_answer, mini_command
from evals.harnesses.opencode import extract_opencode_answer, opencode_config
from evals.processes import toolchain_homes
from nestor.testing import HTTPErrorReply, ScriptedOpenAIServer, ServerReply, ServerUsage

FIXTURES = Path(__file__).parent / "fixtures"
MESSAGES = [{"role": "user", "content": "where is parse_duration defined?"}]


@pytest.fixture
def scripted() -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer(
        [
            ServerReply(text="in units.py", usage=ServerUsage(prompt_tokens=11, completion_tokens=5)),
            ServerReply(text="textkit/units.py, line 4", chunks=4, usage=ServerUsage(120, 9)),
            ServerReply(text="again", chunks=2, usage=ServerUsage(30, 2)),
            HTTPErrorReply(status=500, body={"error": {"message": "boom"}}),
        ]
    ).start()
    yield server
    server.stop()


@pytest.fixture
def proxy(scripted: ScriptedOpenAIServer) -> Iterator[UsageProxy]:
    with UsageProxy("127.0.0.1", scripted.port) as running:
        yield running


def stream_chunks(client: httpx.Client, url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []
    with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        assert "text/event-stream" in response.headers["content-type"]
        for line in response.iter_lines():
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                chunks.append(json.loads(line[5:]))
    return chunks


def test_proxy_sums_the_usage_of_plain_and_streamed_responses(
    proxy: UsageProxy, scripted: ScriptedOpenAIServer
) -> None:
    url = f"{proxy.base_url}/chat/completions"
    with httpx.Client(timeout=10) as client:
        plain = client.post(url, json={"model": "m", "messages": MESSAGES})
        assert plain.status_code == 200
        assert plain.json()["choices"][0]["message"]["content"] == "in units.py"
        assert proxy.usage() == Usage(prompt_tokens=11, completion_tokens=5, requests=1)

        # The client did not ask for usage: the proxy asks for it, counts it, and keeps it from the client.
        chunks = stream_chunks(client, url, {"model": "m", "messages": MESSAGES, "stream": True})
        assert scripted.requests[-1]["stream_options"] == {"include_usage": True}
        assert (
            "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
            == "textkit/units.py, line 4"
        )
        assert all(c["choices"] for c in chunks)
        assert proxy.usage() == Usage(prompt_tokens=131, completion_tokens=14, requests=2)

        # A client that asks for the usage chunk gets it.
        body = {"model": "m", "messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}}
        chunks = stream_chunks(client, url, body)
        assert chunks[-1]["usage"]["prompt_tokens"] == 30
        assert proxy.usage() == Usage(prompt_tokens=161, completion_tokens=16, requests=3)

        # Errors pass through with their status and count as requests without tokens.
        failed = client.post(url, json={"model": "m", "messages": MESSAGES})
        assert failed.status_code == 500
        assert failed.json()["error"]["message"] == "boom"
        usage = proxy.usage()
        assert usage == Usage(prompt_tokens=161, completion_tokens=16, requests=4)
        assert usage.exact

        # Other routes are forwarded and not counted.
        models = client.get(f"{proxy.base_url}/models")
        assert models.json()["data"][0]["id"] == "scripted"
        assert proxy.usage().requests == 4

    proxy.reset_usage()
    assert proxy.usage() == Usage()


def test_a_request_left_behind_is_in_flight_and_not_counted_after_a_reset() -> None:
    slow = ServerReply(text="late", delay=1.0, usage=ServerUsage(prompt_tokens=50, completion_tokens=7))
    with ScriptedOpenAIServer([slow]) as server, UsageProxy("127.0.0.1", server.port) as proxy:
        with httpx.Client(timeout=0.2) as client, pytest.raises(httpx.ReadTimeout):
            client.post(f"{proxy.base_url}/chat/completions", json={"model": "m", "messages": MESSAGES})
        assert proxy.in_flight == 1  # the client is gone; the server still answers
        proxy.reset_usage()
        deadline = time.monotonic() + 10
        while proxy.in_flight and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proxy.in_flight == 0
        assert proxy.usage() == Usage()


def test_the_server_is_shared_and_stopped_by_its_last_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scripted: ScriptedOpenAIServer
) -> None:
    started: list[LlamaServer] = []
    stopped: list[LlamaServer] = []

    def start(self: LlamaServer) -> None:
        started.append(self)
        self._proxy = UsageProxy("127.0.0.1", scripted.port).start()

    def stop(self: LlamaServer) -> None:
        stopped.append(self)
        if self._proxy is not None:
            self._proxy.stop()
            self._proxy = None

    monkeypatch.setattr(LlamaServer, "start", start)
    monkeypatch.setattr(LlamaServer, "stop", stop)
    context = EvalContext(model_path=tmp_path / "m.gguf", work_dir=tmp_path, threads=2)
    first = acquire_server(context)
    assert acquire_server(context) is first and len(started) == 1
    with pytest.raises(RuntimeError, match="another model"):
        acquire_server(EvalContext(model_path=tmp_path / "m.gguf", work_dir=tmp_path, threads=1))
    assert first.base_url.startswith("http://127.0.0.1:") and first.litellm_model.startswith("openai/")
    release_server()
    assert stopped == []
    release_server()
    assert stopped == [first]


def test_settle_restarts_a_server_that_still_answers_a_request_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = ServerReply(text="late", delay=2.0)
    with ScriptedOpenAIServer([slow]) as upstream:
        server = LlamaServer(EvalContext(model_path=tmp_path / "m.gguf", work_dir=tmp_path, threads=2))
        server._proxy = UsageProxy("127.0.0.1", upstream.port).start()
        server._log = (tmp_path / "server.log").open("ab")
        server._process = subprocess.Popen(["sleep", "60"], start_new_session=True)
        old = server._process
        monkeypatch.setattr(llama_server, "SETTLE_GRACE_S", 0.2)
        monkeypatch.setattr(LlamaServer, "_launch", lambda self: 4242)
        server.settle()  # idle: nothing to do
        assert server._process is old
        with httpx.Client(timeout=0.2) as client, pytest.raises(httpx.ReadTimeout):
            client.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": MESSAGES})
        server.settle()
        assert old.poll() is not None  # the old server is gone
        assert server._proxy.upstream_port == 4242
        assert "restarting the server" in (tmp_path / "server.log").read_text()
        server.stop()


class _UsagelessStream(BaseHTTPRequestHandler):
    """Streams like llama-cpp-python's server: one chunk per token, no usage chunk whatever is asked."""

    protocol_version = "HTTP/1.0"
    received: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        deltas = [
            {"role": "assistant"},
            {"content": "text"},
            {"content": "kit"},
            {"content": "/units.py"},
            {},
        ]
        for number, delta in enumerate(deltas):
            finish = "stop" if number == len(deltas) - 1 else None
            chunk = {
                "id": "c",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
        self.wfile.write(b"data: [DONE]\r\n\r\n")


def test_a_stream_without_usage_counts_its_chunks_and_is_marked_inexact() -> None:
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _UsagelessStream)
    thread = threading.Thread(target=upstream.serve_forever, daemon=True)
    thread.start()
    try:
        with UsageProxy("127.0.0.1", upstream.server_address[1]) as proxy, httpx.Client(timeout=10) as client:
            body = {"model": "m", "messages": MESSAGES, "stream": True}
            chunks = stream_chunks(client, f"{proxy.base_url}/chat/completions", body)
            assert len(chunks) == 5
            usage = proxy.usage()
    finally:
        upstream.shutdown()
        upstream.server_close()
    assert _UsagelessStream.received[-1]["stream_options"] == {"include_usage": True}
    assert usage == Usage(prompt_tokens=0, completion_tokens=3, requests=1, unmetered=1)
    assert not usage.exact


def test_aider_command_switches_off_the_network_and_keeps_histories_out_of_the_workspace(
    tmp_path: Path,
) -> None:
    command = aider_command(
        Path("/venv/bin/aider"),
        model="openai/qwen",
        api_base="http://127.0.0.1:5/v1",
        prompt="where is parse_duration defined?",
        metadata=tmp_path / "meta.json",
        run_dir=tmp_path,
        map_tokens=2048,
        timeout_s=600,
    )
    for flag in (
        "--no-check-update",
        "--no-analytics",
        "--no-detect-urls",
        "--no-auto-commits",
        "--no-gitignore",
    ):
        assert flag in command
    assert command[command.index("--openai-api-base") + 1] == "http://127.0.0.1:5/v1"
    assert command[command.index("--chat-history-file") + 1] == str(tmp_path / "chat.history.md")
    assert command[-2:] == ["--message", "where is parse_duration defined?"]
    assert model_metadata("openai/qwen", 16384)["openai/qwen"]["max_input_tokens"] == 16384
    assert [repo_map_tokens(n) for n in (4096, 16384, 65536)] == [1024, 2048, 4096]


def test_mini_command_runs_headless_on_the_text_based_config(tmp_path: Path) -> None:
    command = mini_command(
        Path("/venv/bin/mini"),
        model="openai/qwen",
        api_base="http://127.0.0.1:5/v1",
        prompt="fix it",
        workspace=tmp_path,
        trajectory=tmp_path / "t.json",
        time_limit_s=600.0,
    )
    settings = [command[i + 1] for i, item in enumerate(command) if item == "-c"]
    assert settings[0] == "mini_textbased.yaml"
    assert f"agent.step_limit={STEP_LIMIT}" in settings
    assert "agent.wall_time_limit_seconds=600" in settings
    assert "model.model_kwargs.api_base=http://127.0.0.1:5/v1" in settings
    assert f"environment.cwd={tmp_path}" in settings
    assert {"--yolo", "--exit-immediately"} <= set(command)
    assert command[-2:] == ["--task", "fix it"]


def test_peer_environment_drops_keys_and_proxies_and_has_its_own_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://example.invalid")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    env = peer_environment(tmp_path / "venv", home=tmp_path / "home", extra={"X": "1"})
    assert "OPENAI_API_KEY" not in env and "ANTHROPIC_BASE_URL" not in env and "HTTPS_PROXY" not in env
    assert env["HOME"] == str(tmp_path / "home")
    assert env["XDG_CONFIG_HOME"].startswith(str(tmp_path / "home"))
    assert env["PATH"].startswith(str(tmp_path / "venv" / "bin"))
    assert env["X"] == "1"
    assert (tmp_path / "home" / ".cache").is_dir()


def test_new_run_dir_never_reuses_a_directory(tmp_path: Path) -> None:
    first = new_run_dir(tmp_path, "mini-swe-agent", "a/b c")
    second = new_run_dir(tmp_path, "mini-swe-agent", "a/b c")
    assert first != second and first.is_dir() and second.is_dir()
    assert first.parent == tmp_path / "runs" / "mini-swe-agent"
    assert first.name.startswith("a_b_c-")


# -- answer extraction on outputs recorded from real runs (see fixtures/README.md) --------------


def test_aider_answer_is_every_reply_to_the_prompt_without_aiders_own_lines() -> None:
    history = (FIXTURES / "aider-locate.chat.history.md").read_text(encoding="utf-8")
    answer = extract_aider_answer(history)
    first, second = answer.split("\n\n", 1)
    assert first == "The function `parse_duration` is defined in the file `textkit/units.py`."
    assert second.startswith("Ok, I will:")
    assert second.rstrip().endswith('return f"{seconds}s"\n```')
    for chrome in ("Tokens:", "Add file to the chat?", "Aider v0.86.2", "####", "Repo-map"):
        assert chrome not in answer


def test_aider_answer_comes_from_the_last_session_and_prompt() -> None:
    history = (
        "\n# aider chat started at 2026-01-01 10:00:00\n\n> Aider v0.86.2  \n\n"
        "#### first?  \n\nold answer\n\n"
        "\n# aider chat started at 2026-01-01 11:00:00\n\n> Aider v0.86.2  \n\n"
        "#### line one  \n#### line two  \n\n"
        "A reply\n\n> quoted in the reply, not aider's\n\nmore\n\n> Tokens: 5 sent, 2 received.  \n"
    )
    assert extract_aider_answer(history) == "A reply\n\n> quoted in the reply, not aider's\n\nmore"
    assert extract_aider_answer("") == ""
    assert extract_aider_answer("\n# aider chat started at x\n\n#### q?  \n\n> Tokens: 1 sent.  \n") == ""


def test_mini_answer_of_a_submitted_run_is_its_last_thought() -> None:
    trajectory = json.loads(
        (FIXTURES / "mini-locate-submitted-scripted.traj.json").read_text(encoding="utf-8")
    )
    assert extract_mini_answer(trajectory) == ("It is defined in textkit/units.py, line 4.", "Submitted")


def test_mini_answer_of_a_run_killed_at_its_time_limit_is_its_last_prose() -> None:
    trajectory = json.loads((FIXTURES / "mini-locate-timed-out.traj.json").read_text(encoding="utf-8"))
    answer, status = extract_mini_answer(trajectory)
    assert status == ""  # killed: the trajectory has no exit message
    assert answer.startswith("<error>\nExpected exactly 1 action, found 2.")
    assert "mswea_bash_command" not in answer


def test_mini_answer_adds_the_submission_and_reads_content_parts() -> None:
    trajectory = {
        "info": {"exit_status": "Submitted", "submission": "textkit/units.py:4\n"},
        "messages": [
            {"role": "assistant", "content": [{"type": "text", "text": "THOUGHT: found it."}]},
            {
                "role": "assistant",
                "content": "THOUGHT:\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",
            },
            {"role": "exit", "content": "textkit/units.py:4\n"},
        ],
    }
    assert extract_mini_answer(trajectory) == ("found it.\n\ntextkit/units.py:4", "Submitted")


def test_opencode_answer_is_the_text_of_its_last_step() -> None:
    events = (FIXTURES / "opencode-locate-scripted.jsonl").read_text(encoding="utf-8")
    assert extract_opencode_answer(events) == "parse_duration is defined in textkit/units.py."
    # A run that ended on a step without text (killed while calling a tool) answers with the last text.
    early = (
        '{"type":"step_start"}\n{"type":"text","part":{"text":"Looking."}}\n{"type":"step_start"}\nnot json\n'
    )
    assert extract_opencode_answer(early) == "Looking."
    assert extract_opencode_answer("") == ""


def test_opencode_config_declares_the_proxy_as_its_one_provider_and_nothing_that_leaves_loopback() -> None:
    config = opencode_config("http://127.0.0.1:4321/v1", "qwen", 16384)
    provider = config["provider"]["llama"]
    assert provider["options"]["baseURL"] == "http://127.0.0.1:4321/v1"
    assert provider["models"]["qwen"]["limit"] == {"context": 16384, "output": 1024}
    assert config["model"] == "llama/qwen" and config["share"] == "disabled" and config["autoupdate"] is False


def test_harnesses_with_a_home_of_their_own_keep_the_users_rust_toolchain(tmp_path: Path) -> None:
    # Found on the Rust tasks: under the eval's private HOME, rustup found no toolchain and every
    # `cargo test` a harness ran failed before compiling.
    (tmp_path / ".rustup").mkdir()
    assert toolchain_homes({"HOME": str(tmp_path)}) == {"RUSTUP_HOME": str(tmp_path / ".rustup")}
    cargo = tmp_path / "elsewhere"
    cargo.mkdir()
    assert toolchain_homes({"HOME": str(tmp_path), "CARGO_HOME": str(cargo)}) == {
        "RUSTUP_HOME": str(tmp_path / ".rustup"),
        "CARGO_HOME": str(cargo),
    }
    env = peer_environment(tmp_path / "venv", home=tmp_path / "peer")
    assert env["HOME"] == str(tmp_path / "peer")
    assert all(env[name] == value for name, value in toolchain_homes().items())

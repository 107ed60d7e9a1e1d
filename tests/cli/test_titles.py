"""Session titles seen from the command line: ``nestor run`` end to end, the REPL, the renderer."""

from __future__ import annotations

import asyncio
import io
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from nestor.cli.render import EventRenderer
from nestor.cli.repl import Terminal, repl_main
from nestor.config.loading import load_settings
from nestor.config.settings import Settings
from nestor.core.events import SessionTitled
from nestor.testing import HTTPErrorReply, ScriptedOpenAIServer, ServerReply, ServerUsage
from tests.cli.repl_support import eventually, lines_of, plain_console
from tests.cli.support import git_repo, nestor, nestor_json, openai_env

ENTER = "\r"
PROMPT = "fix the parser\nit drops the last token"
MODEL = ["--model", "openai-chat:gpt-4o"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo", {"parser.py": "def parse(tokens):\n    return tokens[:-1]\n"})


def test_run_titles_the_new_session_with_the_small_model(repo: Path, tmp_path: Path) -> None:
    script = [
        ServerReply(text="The slice drops the last token; use tokens[:] instead."),
        ServerReply(
            text='"Parser drops last token"', usage=ServerUsage(prompt_tokens=90, completion_tokens=6)
        ),
    ]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        outcome = nestor_json(
            ["run", "-o", "json", *MODEL, "--small-model", "openai-chat:gpt-4o-mini", PROMPT],
            cwd=repo,
            env=env,
        )
        requests = server.requests
    assert [request["model"] for request in requests] == ["gpt-4o", "gpt-4o-mini"]
    title_request = json.dumps(requests[1]["messages"])
    assert "it drops the last token" in title_request and "use tokens[:] instead" in title_request
    listed = nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)
    assert [(s["id"], s["title"]) for s in listed] == [(outcome["session_id"], "Parser drops last token")]
    assert listed[0]["usage"]["requests"] == 2 and listed[0]["usage"]["input_tokens"] > 90


def test_a_failed_title_request_leaves_the_prompts_first_line(repo: Path, tmp_path: Path) -> None:
    script = [ServerReply(text="Done."), HTTPErrorReply(400, body={"error": {"message": "bad model"}})]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        done = nestor(["run", *MODEL, PROMPT], cwd=repo, env=env)
        assert len(server.requests) == 2  # the title was asked for, and refused
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Done." and done.stderr == ""
    listed = nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)
    assert [s["title"] for s in listed] == ["fix the parser"]


def test_stream_json_has_the_title_event_before_the_result(repo: Path, tmp_path: Path) -> None:
    with ScriptedOpenAIServer([ServerReply(text="Done."), ServerReply(text="Parser fix")]) as server:
        done = nestor(
            ["run", "-o", "stream-json", *MODEL, PROMPT], cwd=repo, env=openai_env(tmp_path, server)
        )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["type"] for line in lines[-3:]] == ["agent_finished", "session_titled", "result"]
    assert lines[-2]["title"] == "Parser fix" and lines[-2]["agent_id"] == lines[-1]["session_id"]


def test_a_resumed_run_keeps_its_title(repo: Path, tmp_path: Path) -> None:
    script = [ServerReply(text="first"), ServerReply(text="Parser work"), ServerReply(text="second")]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        first = nestor_json(["run", "-o", "json", *MODEL, PROMPT], cwd=repo, env=env)
        second = nestor_json(["run", "-o", "json", *MODEL, "--continue", "and now?"], cwd=repo, env=env)
        assert server.remaining == 0 and len(server.requests) == 3
    assert first["session_id"] == second["session_id"] and second["result"] == "second"
    assert [s["title"] for s in nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)] == [
        "Parser work"
    ]


def test_ctrl_c_while_waiting_for_the_title_exits_without_it(repo: Path, tmp_path: Path) -> None:
    # The title reply takes longer than the test's guard: only Ctrl-C ends the wait for it in time.
    script = [ServerReply(text="Done."), ServerReply(text="Never seen", delay=120)]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        process = subprocess.Popen(
            [sys.executable, "-m", "nestor", "run", "-o", "json", *MODEL, PROMPT],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            outcome = json.loads(process.stdout.readline())  # printed before the wait for the title
            process.send_signal(signal.SIGINT)
            _rest, stderr = process.communicate(timeout=60)
        finally:
            process.kill()
    assert process.returncode == 0, stderr  # the run completed; only the title was given up
    assert outcome["result"] == "Done." and "interrupted" not in stderr
    assert [s["title"] for s in nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)] == [
        "fix the parser"
    ]


# -- the REPL ---------------------------------------------------------------------------------


def write_project(root: Path, base_url: str) -> Settings:
    project = root / "project"
    project.mkdir(exist_ok=True)
    config = '[models]\nlarge = "scripted:model"\n\n'
    config += f'[providers.scripted]\ntype = "openai"\nbase_url = "{base_url}"\n'
    (project / "nestor.toml").write_text(config, encoding="utf-8")
    env = {"NESTOR_HOME": str(root / "home"), "HOME": str(root)}
    return load_settings(project, env=env, user_config_path=root / "no-user-config.toml", trusted=True)


async def test_repl_shows_the_title_and_session_has_it(tmp_path: Path) -> None:
    buffer = io.StringIO()
    script = [ServerReply(text="Hello there."), ServerReply(text="Title: Greeting")]
    with ScriptedOpenAIServer(script) as server:
        settings = write_project(tmp_path, server.base_url)
        with create_pipe_input() as pipe:
            terminal = Terminal(plain_console(buffer), input=pipe, output=DummyOutput())
            task = asyncio.create_task(repl_main(settings, terminal=terminal, env={}))
            pipe.send_text("say hello" + ENTER)
            await eventually(lambda: "session title: Greeting" in lines_of(buffer))
            pipe.send_text("/session" + ENTER)
            await eventually(lambda: any(line.startswith("  history") for line in lines_of(buffer)))
            pipe.send_text("/exit" + ENTER)
            async with asyncio.timeout(10):
                assert await task == 0
    assert "  title    Greeting" in lines_of(buffer)


async def test_repl_exit_cancels_a_title_still_being_written(tmp_path: Path) -> None:
    buffer = io.StringIO()
    script = [ServerReply(text="Hello there."), ServerReply(text="Never seen", delay=120)]
    with ScriptedOpenAIServer(script) as server:
        settings = write_project(tmp_path, server.base_url)
        with create_pipe_input() as pipe:
            terminal = Terminal(plain_console(buffer), input=pipe, output=DummyOutput())
            task = asyncio.create_task(repl_main(settings, terminal=terminal, env={}))
            pipe.send_text("say hello" + ENTER)
            await eventually(lambda: len(server.requests) == 2)
            pipe.send_text("/exit" + ENTER)
            async with asyncio.timeout(10):
                assert await task == 0
    assert not any(line.startswith("session title:") for line in lines_of(buffer))


def test_renderer_shows_the_main_sessions_title_only() -> None:
    buffer = io.StringIO()
    renderer = EventRenderer(plain_console(buffer), main_agent_id="ses_main")
    renderer.handle(SessionTitled(agent_id="ses_main", title="Parser fix"))
    renderer.handle(SessionTitled(agent_id="ses_child", title="Sub-task"))
    assert lines_of(buffer) == ["session title: Parser fix"]

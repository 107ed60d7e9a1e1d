"""The REPL's keys and loop, driven through a prompt_toolkit pipe input over a real agent loop."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import fragment_list_to_text, to_formatted_text
from prompt_toolkit.history import History
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from nestor.cli.options import CommonOptions
from nestor.cli.repl import (
    LazyFileHistory,
    LinePrompt,
    SlashCommandCompleter,
    Terminal,
    interact,
    repl_main,
    run_repl,
)
from nestor.config.loading import load_settings
from nestor.config.settings import Settings
from nestor.core.events import AgentFinished, AgentStarted, PromptQueued
from nestor.testing.openai_server import ScriptedOpenAIServer, ServerReply, ServerToolCall
from nestor.testing.scripted_model import call, reply
from tests.cli.repl_support import (
    Gate,
    MakeHarness,
    ReplHarness,
    RunTool,
    eventually,
    lines_of,
    make_harness,
    plain_console,
    user_prompts,
)

__all__ = ["make_harness"]

ESC = "\x1b"
CTRL_C = "\x03"
CTRL_D = "\x04"
ENTER = "\r"


@dataclass
class Repl:
    """A REPL running in a task, read from a pipe."""

    pipe: PipeInput
    prompt: LinePrompt
    task: asyncio.Task[int]

    async def ready(self) -> None:
        """Wait until the prompt is reading keys."""
        await eventually(lambda: self.prompt.session.app.is_running)

    async def type(self, keys: str) -> None:
        await self.ready()
        self.pipe.send_text(keys)

    async def exit_code(self) -> int:
        async with asyncio.timeout(10):
            return await self.task


@contextlib.asynccontextmanager
async def running_repl(harness: ReplHarness, *, history: History | None = None) -> AsyncIterator[Repl]:
    await harness.controller.open(None)
    with create_pipe_input() as pipe:
        prompt = LinePrompt(
            harness.controller, harness.question, history=history, input=pipe, output=DummyOutput()
        )
        task = asyncio.create_task(interact(harness.controller, prompt))
        try:
            yield Repl(pipe, prompt, task)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task


async def test_enter_sends_and_ctrl_d_exits(make_harness: MakeHarness) -> None:
    harness = make_harness([reply("Hello from the model.")])
    async with running_repl(harness) as repl:
        await repl.type("hi there" + ENTER)
        await harness.wait_finished(1)
        await repl.type(CTRL_D)
        assert await repl.exit_code() == 0
    assert "Hello from the model." in harness.lines()
    assert user_prompts(harness.model.requests[0].messages) == ["hi there"]


async def test_exit_command_ends_the_repl(make_harness: MakeHarness) -> None:
    harness = make_harness()
    async with running_repl(harness) as repl:
        await repl.type("/exit" + ENTER)
        assert await repl.exit_code() == 0
    assert harness.model.requests == []


async def test_esc_cancels_the_run_and_the_repl_stays_open(make_harness: MakeHarness) -> None:
    gate = Gate()
    harness = make_harness([gate.step(reply("never")), reply("second answer")])
    async with running_repl(harness) as repl:
        await repl.type("long job" + ENTER)
        await gate.entered.wait()
        await repl.type(ESC)
        assert (await harness.wait_finished(1)).stop_reason == "cancelled"
        await repl.type("next" + ENTER)
        await harness.wait_finished(2)
        await repl.type("/quit" + ENTER)
        assert await repl.exit_code() == 0
    assert "second answer" in harness.lines()
    assert user_prompts(harness.model.requests[-1].messages) == ["long job", "next"]


async def test_ctrl_c_cancels_the_run(make_harness: MakeHarness) -> None:
    gate = Gate()
    harness = make_harness([gate.step(reply("never"))])
    async with running_repl(harness) as repl:
        await repl.type("long job" + ENTER)
        await gate.entered.wait()
        await repl.type(CTRL_C)
        assert (await harness.wait_finished(1)).stop_reason == "cancelled"
        assert not repl.task.done()
        assert not repl.prompt.exit_armed


async def test_ctrl_c_clears_the_line_then_twice_on_empty_exits(make_harness: MakeHarness) -> None:
    harness = make_harness()
    async with running_repl(harness) as repl:
        buffer = repl.prompt.session.default_buffer
        await repl.type("half a thought")
        await eventually(lambda: buffer.text == "half a thought")
        await repl.type(CTRL_C)
        await eventually(lambda: buffer.text == "")
        assert not repl.prompt.exit_armed
        await repl.type(CTRL_C)
        await eventually(lambda: repl.prompt.exit_armed)
        await repl.type("x")  # typing disarms: the next Ctrl-C only clears
        await eventually(lambda: not repl.prompt.exit_armed)
        await repl.type(CTRL_C + CTRL_C)
        await eventually(lambda: repl.prompt.exit_armed)
        assert not repl.task.done()
        await repl.type(CTRL_C)
        assert await repl.exit_code() == 0
    assert harness.model.requests == []


async def test_a_line_typed_while_busy_is_queued(make_harness: MakeHarness) -> None:
    gate = Gate()
    harness = make_harness([gate.step(reply("first answer")), reply("second answer")])
    async with running_repl(harness) as repl:
        await repl.type("first" + ENTER)
        await gate.entered.wait()
        await repl.type("second" + ENTER)
        await eventually(lambda: any(isinstance(event, PromptQueued) for event in harness.events))
        gate.release.set()
        await harness.wait_finished(1)
    assert user_prompts(harness.model.requests[1].messages) == ["first", "second"]
    assert harness.lines().count("second answer") == 1


async def test_ctrl_d_while_busy_stops_the_run_and_exits(make_harness: MakeHarness) -> None:
    gate = Gate()
    harness = make_harness([gate.step(reply("never"))])
    async with running_repl(harness) as repl:
        await repl.type("long job" + ENTER)
        await gate.entered.wait()
        await repl.type(CTRL_D)
        assert await repl.exit_code() == 0
    assert harness.finished()[0].stop_reason == "cancelled"
    assert harness.lines()[-1].startswith("resume this session with: nestor --resume ses_")


async def test_alt_enter_and_a_trailing_backslash_add_lines(make_harness: MakeHarness) -> None:
    harness = make_harness([reply("one"), reply("two")])
    async with running_repl(harness) as repl:
        await repl.type("first line" + ESC + ENTER + "second line" + ENTER)
        await harness.wait_finished(1)
        await repl.type("third\\" + ENTER + "fourth" + ENTER)
        await harness.wait_finished(2)
    prompts = user_prompts(harness.model.requests[1].messages)
    assert prompts == ["first line\nsecond line", "third\nfourth"]


async def test_permission_question_answered_with_a_key(make_harness: MakeHarness) -> None:
    tool = RunTool()
    harness = make_harness(
        [call("run", {"command": "make"}), call("run", {"command": "make install"}), reply("Built.")],
        tools=[tool],
    )
    async with running_repl(harness) as repl:
        await repl.type("build it" + ENTER)
        await eventually(lambda: harness.question.text is not None)
        assert harness.question.text == "Allow Run: make? [y] once  [a] for this session  [n] deny"
        await repl.type("y")
        await eventually(
            lambda: (
                harness.question.text == "Allow Run: make install? [y] once  [a] for this session  [n] deny"
            )
        )
        await repl.type("n")
        await harness.wait_finished(1)
        assert repl.prompt.session.default_buffer.text == ""
    assert tool.ran == ["make"]
    lines = harness.lines()
    assert "  ⎿ ✓ allowed once: Run: make" in lines
    assert "  ⎿ ✗ denied: Run: make install" in lines
    assert "Built." in lines


async def test_esc_at_a_permission_question_denies(make_harness: MakeHarness) -> None:
    tool = RunTool()
    harness = make_harness(
        [call("run", {"command": "rm -rf build"}), reply("Okay, I will not.")], tools=[tool]
    )
    async with running_repl(harness) as repl:
        await repl.type("clean" + ENTER)
        await eventually(lambda: harness.question.text is not None)
        await repl.type(ESC)
        finished = await harness.wait_finished(1)
    assert finished.stop_reason == "completed"
    assert tool.ran == []
    assert "  ⎿ ✗ denied: Run: rm -rf build" in harness.lines()


async def test_ctrl_c_at_a_permission_question_denies_and_stops(make_harness: MakeHarness) -> None:
    tool = RunTool()
    harness = make_harness([call("run", {"command": "deploy"}), reply("unused")], tools=[tool])
    async with running_repl(harness) as repl:
        await repl.type("ship it" + ENTER)
        await eventually(lambda: harness.question.text is not None)
        await repl.type(CTRL_C)
        finished = await harness.wait_finished(1)
        assert harness.question.text is None
    assert finished.stop_reason == "cancelled"
    assert tool.ran == []


async def test_history_file_is_created_only_when_a_line_is_sent(
    make_harness: MakeHarness, tmp_path: Path
) -> None:
    path = tmp_path / "not-yet" / "repl_history"
    history = LazyFileHistory(path)
    assert not path.parent.exists()
    harness = make_harness([reply("ok")])
    async with running_repl(harness, history=history) as repl:
        await repl.type("remember me" + ENTER)
        await harness.wait_finished(1)
    assert "+remember me" in path.read_text(encoding="utf-8")


def test_slash_commands_complete_at_the_start_of_the_line() -> None:
    completer = SlashCommandCompleter({"/help": "help", "/cost": "cost", "/clear": "clear"})

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert complete("/c") == ["/cost", "/clear"]
    assert complete("/") == ["/help", "/cost", "/clear"]
    assert complete("/cost now") == []
    assert complete("cost") == []


# -- the whole REPL over the app, against a loopback OpenAI-compatible server ----------------


def write_project(root: Path, *, model: str, base_url: str | None = None) -> Settings:
    project = root / "project"
    project.mkdir(exist_ok=True)
    config = f'[models]\nlarge = "{model}"\n'
    if base_url is not None:
        config += f'\n[providers.scripted]\ntype = "openai"\nbase_url = "{base_url}"\n'
    (project / "nestor.toml").write_text(config, encoding="utf-8")
    env = {"NESTOR_HOME": str(root / "home"), "HOME": str(root)}
    return load_settings(project, env=env, user_config_path=root / "no-user-config.toml", trusted=True)


async def test_repl_main_end_to_end(tmp_path: Path) -> None:
    buffer = io.StringIO()
    with ScriptedOpenAIServer([ServerReply(text="Hello over **HTTP**.", chunks=3)]) as server:
        settings = write_project(tmp_path, model="scripted:model", base_url=server.base_url)
        with create_pipe_input() as pipe:
            terminal = Terminal(plain_console(buffer), input=pipe, output=DummyOutput())
            task = asyncio.create_task(repl_main(settings, terminal=terminal, env={}))
            pipe.send_text("say hello" + ENTER)
            await eventually(lambda: any(line.startswith("1 turn · ") for line in lines_of(buffer)))
            pipe.send_text("/exit" + ENTER)
            async with asyncio.timeout(10):
                assert await task == 0
        assert server.requests[0]["messages"][-1]["content"] == "say hello"
    lines = lines_of(buffer)
    assert lines[0].startswith("nestor · scripted:model · new session ses_")
    assert "Hello over HTTP." in lines
    session_id = lines[-1].removeprefix("resume this session with: nestor --resume ")
    assert (tmp_path / "home" / "repl_history").read_text(encoding="utf-8").count("+say hello") == 1

    resumed = io.StringIO()
    with ScriptedOpenAIServer([ServerReply(text="Still here.")]) as server:
        settings = write_project(tmp_path, model="scripted:model", base_url=server.base_url)
        with create_pipe_input() as pipe:
            terminal = Terminal(plain_console(resumed), input=pipe, output=DummyOutput())
            task = asyncio.create_task(repl_main(settings, continue_latest=True, terminal=terminal, env={}))
            pipe.send_text("again" + ENTER)
            await eventually(lambda: any(line.startswith("1 turn · ") for line in lines_of(resumed)))
            pipe.send_text(CTRL_D)
            async with asyncio.timeout(10):
                assert await task == 0
        sent = [message["content"] for message in server.requests[0]["messages"] if message["role"] == "user"]
        assert sent == ["say hello", "again"]
    assert lines_of(resumed)[0].startswith(
        f"nestor · scripted:model · resumed {session_id} (2 messages, say hello)"
    )


async def test_repl_main_prints_each_line_of_a_real_sub_agent_once(tmp_path: Path) -> None:
    task = {"description": "find the readme", "prompt": "where is it?", "subagent_type": "general"}
    script = [
        ServerReply(tool_calls=(ServerToolCall("task", task),)),
        ServerReply(tool_calls=(ServerToolCall("ls", {"path": "."}),)),
        ServerReply(text="It is README.md."),
        ServerReply(text="The readme is README.md."),
    ]
    buffer = io.StringIO()
    with ScriptedOpenAIServer(script) as server:
        settings = write_project(tmp_path, model="scripted:model", base_url=server.base_url)
        with create_pipe_input() as pipe:
            terminal = Terminal(plain_console(buffer), input=pipe, output=DummyOutput())
            repl = asyncio.create_task(repl_main(settings, terminal=terminal, env={}))
            pipe.send_text("find the readme" + ENTER)
            await eventually(lambda: any(line.startswith("2 turns · ") for line in lines_of(buffer)))
            pipe.send_text("/exit" + ENTER)
            async with asyncio.timeout(10):
                assert await repl == 0
    lines = [line for line in lines_of(buffer) if line]
    assert len(lines) == len(set(lines)), lines
    [sub_agent] = [line for line in lines if line.startswith("  [general] find the readme")]
    assert sub_agent.startswith("  [general] find the readme - done (1 tool, ")


async def test_repl_main_reports_a_model_that_cannot_be_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = write_project(tmp_path, model="openai:gpt-5")
    buffer = io.StringIO()
    code = await repl_main(settings, terminal=Terminal(plain_console(buffer)), env={})
    assert code == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: ") and "OPENAI_API_KEY" in "\n".join(err)
    assert err[1].startswith("hint: ")
    assert buffer.getvalue() == ""


async def test_repl_main_reports_an_unknown_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = write_project(tmp_path, model="scripted:model", base_url="http://127.0.0.1:9/v1")
    code = await repl_main(
        settings, resume="ses_nope", terminal=Terminal(plain_console(io.StringIO())), env={}
    )
    assert code == 1
    assert capsys.readouterr().err.startswith("error: ")


async def test_repl_main_refuses_a_session_another_nestor_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    from nestor.store import SessionStore, open_database
    from nestor.store.lease import ProcessIdentity

    settings = write_project(tmp_path, model="scripted:model", base_url="http://127.0.0.1:9/v1")
    other = subprocess.Popen(["sleep", "60"])  # noqa: ASYNC220 - a live process to hold the session
    try:
        with open_database(settings.database_path) as db:
            session = SessionStore(db).create(str(settings.project_root))
            SessionStore(db, holder=ProcessIdentity.of(other.pid)).acquire(session.id)
        code = await repl_main(
            settings, resume=session.id, terminal=Terminal(plain_console(io.StringIO())), env={}
        )
    finally:
        other.kill()
        other.wait()
    assert code == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"error: session {session.id} is in use by another nestor (pid {other.pid})"
    assert err[1].startswith("hint: ")


def test_run_repl_needs_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # pytest's stdin is not a terminal, like `nestor < file`.
    assert run_repl(CommonOptions(directory=tmp_path), resume=None, continue_latest=False) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the interactive REPL needs a terminal on stdin\nhint: ")
    assert "nestor run" in err


async def test_the_toolbar_has_a_line_of_counters_per_running_sub_agent(make_harness: MakeHarness) -> None:
    harness = make_harness()
    await harness.controller.open(None)
    main_id = harness.controller.conversation.session_id
    with create_pipe_input() as pipe:
        prompt = LinePrompt(harness.controller, harness.question, input=pipe, output=DummyOutput())

        def toolbar() -> list[str]:
            return fragment_list_to_text(to_formatted_text(prompt.session.bottom_toolbar)).splitlines()

        assert toolbar() == ["Enter send · Alt-Enter new line · /help · Ctrl-D exit"]
        # A background sub-agent runs while the main agent is idle: its counters show anyway.
        child = {"agent_id": "ses_child", "parent_id": main_id, "depth": 1, "agent_type": "explore"}
        harness.base.bus.publish(AgentStarted.model_validate({**child, "description": "find auth code"}))
        lines = toolbar()
        assert lines[0] == "Enter send · Alt-Enter new line · /help · Ctrl-D exit"
        assert len(lines) == 2 and lines[1].startswith("  [explore] find auth code … 0 tools, ")
        harness.base.bus.publish(
            AgentFinished.model_validate({**child, "stop_reason": "completed", "result": ""})
        )
        assert len(toolbar()) == 1


async def test_a_running_sub_agent_is_shown_once_in_the_toolbar_then_once_when_done(
    make_harness: MakeHarness,
) -> None:
    harness = make_harness()
    await harness.controller.open(None)
    main_id = harness.controller.conversation.session_id
    with create_pipe_input() as pipe:
        prompt = LinePrompt(harness.controller, harness.question, input=pipe, output=DummyOutput())

        def toolbar() -> list[str]:
            return fragment_list_to_text(to_formatted_text(prompt.session.bottom_toolbar)).splitlines()

        child = {"agent_id": "ses_child", "parent_id": main_id, "depth": 1, "agent_type": "explore"}
        harness.base.bus.publish(AgentStarted.model_validate({**child, "description": "find auth code"}))
        on_screen = [*harness.lines(), *toolbar()]
        assert [line for line in on_screen if "[explore] find auth code" in line] == [toolbar()[1]]
        harness.base.bus.publish(
            AgentFinished.model_validate({**child, "stop_reason": "completed", "result": ""})
        )
        on_screen = [*harness.lines(), *toolbar()]
        [done] = [line for line in on_screen if "[explore] find auth code" in line]
        assert done.startswith("  [explore] find auth code - done (")

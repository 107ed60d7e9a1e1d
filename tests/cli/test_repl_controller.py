"""The REPL's logic on a real agent loop: prompts, queueing, cancelling, slash commands, permissions."""

from __future__ import annotations

import asyncio

from nestor.cli.render import EventRenderer
from nestor.cli.repl_controller import PermissionPrompter, parse_answer
from nestor.core.errors import MissingCredentialsError
from nestor.core.events import TextDelta
from nestor.core.permission import PermissionRequest
from nestor.testing.scripted_model import call, reply
from tests.cli.repl_support import Gate, MakeHarness, RunTool, eventually, make_harness, user_prompts

__all__ = ["make_harness"]

PUSH = PermissionRequest("bash", "execute", "git push", "Run: git push")
TEST = PermissionRequest("bash", "execute", "pytest", "Run: pytest")


# -- the permission prompter ------------------------------------------------------------------


def test_answers_map_to_once_session_deny() -> None:
    assert [parse_answer(text) for text in ("y", "Y", "yes", " once ")] == ["once"] * 4
    assert [parse_answer(text) for text in ("a", "A", "always", "session")] == ["session"] * 4
    assert [parse_answer(text) for text in ("n", "no", "deny")] == ["deny"] * 3
    assert parse_answer("maybe") is None
    assert parse_answer("") is None


async def test_prompter_asks_again_until_the_answer_is_understood(make_harness: MakeHarness) -> None:
    replies = iter(["maybe", "", "a"])
    questions: list[str] = []

    async def read_answer(question: str) -> str:
        questions.append(question)
        return next(replies)

    harness = make_harness()
    prompter = PermissionPrompter(read_answer, harness.renderer)
    assert await prompter.ask(PUSH, "") == "session"
    assert questions == ["Allow Run: git push? [y] once  [a] for this session  [n] deny"] * 3
    assert harness.lines() == ["  ⎿ ✓ allowed for this session: Run: git push"]


async def test_prompter_asks_one_question_at_a_time(make_harness: MakeHarness) -> None:
    asked: list[str] = []
    answers: dict[str, asyncio.Future[str]] = {}
    harness = make_harness()

    async def read_answer(question: str) -> str:
        asked.append(question)
        answers[question] = asyncio.get_running_loop().create_future()
        return await answers[question]

    prompter = PermissionPrompter(read_answer, harness.renderer)
    first = asyncio.create_task(prompter.ask(PUSH, ""))
    second = asyncio.create_task(prompter.ask(TEST, ""))
    await eventually(lambda: len(asked) == 1)
    for _ in range(20):  # let the second ask run as far as it can: it must wait for the first
        await asyncio.sleep(0)
    assert len(asked) == 1 and "git push" in asked[0]
    answers[asked[0]].set_result("n")
    assert await first == "deny"
    await eventually(lambda: len(asked) == 2)
    assert "pytest" in asked[1]
    answers[asked[1]].set_result("y")
    assert await second == "once"
    assert harness.lines() == ["  ⎿ ✗ denied: Run: git push", "  ⎿ ✓ allowed once: Run: pytest"]


async def test_prompter_prints_pending_text_before_asking(make_harness: MakeHarness) -> None:
    harness = make_harness()
    renderer: EventRenderer = harness.renderer
    renderer.main_agent_id = "ses_main"
    renderer.handle(TextDelta(agent_id="ses_main", text="I will push now."))
    seen: list[str] = []

    async def read_answer(question: str) -> str:
        seen.extend(harness.lines())
        return "y"

    await PermissionPrompter(read_answer, renderer).ask(PUSH, "ses_main")
    assert "I will push now." in seen


# -- prompts and runs -------------------------------------------------------------------------


async def test_a_prompt_runs_and_is_summarised(make_harness: MakeHarness) -> None:
    harness = make_harness([reply("The answer is **42**.\n\nDone.", chunks=4)])
    await harness.controller.open(None)
    session_id = harness.controller.conversation.session_id
    assert harness.lines()[0].startswith(f"nestor · test:scripted · new session {session_id}")
    assert await harness.controller.handle_line("what is the answer?\nthink hard")
    result = await harness.controller.wait()
    assert result is not None and result.stop_reason == "completed"
    lines = harness.lines()
    assert "The answer is 42." in lines and "Done." in lines
    assert any(line.startswith("1 turn · ") and "cost unknown" in line for line in lines)
    assert harness.sessions.get(session_id).title == "what is the answer?"
    assert user_prompts(harness.messages.list(session_id)) == ["what is the answer?\nthink hard"]


async def test_blank_lines_do_nothing(make_harness: MakeHarness) -> None:
    harness = make_harness()
    await harness.controller.open(None)
    assert await harness.controller.handle_line("   \n ")
    assert not harness.controller.busy
    assert harness.model.requests == []


async def test_cancel_stops_the_run_and_keeps_the_conversation(make_harness: MakeHarness) -> None:
    gate = Gate()
    harness = make_harness([gate.step(reply("never shown")), reply("second answer")])
    controller = harness.controller
    await controller.open(None)
    session_id = controller.conversation.session_id
    await controller.handle_line("a long job")
    await gate.entered.wait()
    assert controller.busy
    assert controller.cancel()
    result = await controller.wait()
    assert result is not None and result.stop_reason == "cancelled"
    assert not controller.busy and not controller.cancel()
    assert "⏹ interrupted; the conversation so far is kept" in harness.lines()
    assert "never shown" not in harness.text()

    await controller.handle_line("try something else")
    await harness.wait_finished(2)
    assert "second answer" in harness.lines()
    assert user_prompts(harness.model.requests[-1].messages) == ["a long job", "try something else"]
    assert user_prompts(harness.messages.list(session_id)) == ["a long job", "try something else"]


async def test_a_prompt_sent_while_busy_is_queued(make_harness: MakeHarness) -> None:
    gate = Gate()
    harness = make_harness([gate.step(reply("first answer")), reply("second answer")])
    controller = harness.controller
    await controller.open(None)
    assert controller.submit("first") is not None
    await gate.entered.wait()
    assert controller.submit("and also this") is None
    assert "↳ queued for the next turn: and also this" in harness.lines()
    gate.release.set()
    finished = await harness.wait_finished(1)
    assert finished.num_turns == 2
    assert user_prompts(harness.model.requests[1].messages) == ["first", "and also this"]
    assert "second answer" in harness.lines()


async def test_tool_calls_and_a_permission_question_in_a_run(make_harness: MakeHarness) -> None:
    questions: list[str] = []

    async def read_answer(question: str) -> str:
        questions.append(question)
        return "a"

    tool = RunTool()
    harness = make_harness(
        [
            call("run", {"command": "make test"}),
            call("run", {"command": "make test"}),
            reply("All green."),
        ],
        tools=[tool],
        read_answer=read_answer,
    )
    await harness.controller.open(None)
    await harness.controller.handle_line("run the tests")
    await harness.wait_finished(1)
    assert tool.ran == ["make test", "make test"]
    assert questions == ["Allow Run: make test? [y] once  [a] for this session  [n] deny"]
    lines = harness.lines()
    assert lines.count("● run make test") == 2
    assert "  ⎿ ✓ allowed for this session: Run: make test" in lines
    assert sum(line.startswith("  ⎿ ✓ ") and line.endswith("· ran make test…") for line in lines) == 2
    assert any(line.startswith("3 turns · ") for line in lines)


# -- slash commands ---------------------------------------------------------------------------


async def test_help_exit_and_unknown_commands(make_harness: MakeHarness) -> None:
    harness = make_harness()
    controller = harness.controller
    await controller.open(None)
    assert await controller.handle_line("/help")
    text = harness.text()
    for command in (
        "/help",
        "/cost",
        "/session",
        "/clear",
        "/compact",
        "/undo",
        "/rewind",
        "/fork",
        "/agents",
        "/model",
        "/sessions",
        "/resume",
        "/exit",
        "/quit",
    ):
        assert f"\n{command}" in text
    assert await controller.handle_line("/frobnicate now")
    assert " ".join(harness.lines()[-2:]) == (
        "unknown command /frobnicate; the commands are: "
        "/help /cost /session /clear /compact /undo /rewind /fork /agents /model /sessions /resume "
        "/exit /quit"
    )
    assert not await controller.handle_line("/exit")
    assert not await controller.handle_line("/QUIT")
    assert harness.model.requests == []


async def test_a_line_starting_with_a_path_is_a_prompt(make_harness: MakeHarness) -> None:
    harness = make_harness()
    await harness.controller.open(None)
    assert await harness.controller.handle_line("/etc/hosts looks wrong")
    await harness.wait_finished(1)
    assert user_prompts(harness.model.requests[0].messages) == ["/etc/hosts looks wrong"]


async def test_cost_and_session_commands(make_harness: MakeHarness) -> None:
    harness = make_harness([reply("hi")])
    controller = harness.controller
    await controller.open(None)
    session_id = controller.conversation.session_id
    await controller.handle_line("hello there")
    await controller.wait()
    await controller.handle_line("/cost")
    assert harness.lines()[-1].startswith(f"session {session_id}: 1 request · ")
    assert harness.lines()[-1].endswith("cost unknown")
    await controller.handle_line("/session")
    assert harness.lines()[-5:] == [
        f"session {session_id}",
        "  title    hello there",
        "  model    test:scripted",
        f"  project  {harness.root}",
        "  history  2 messages · idle",
    ]


async def test_clear_starts_a_new_session(make_harness: MakeHarness) -> None:
    harness = make_harness([reply("one"), reply("two")])
    controller = harness.controller
    await controller.open(None)
    first_id = controller.conversation.session_id
    await controller.handle_line("first question")
    await controller.wait()
    await controller.handle_line("/clear")
    second_id = controller.conversation.session_id
    assert second_id != first_id
    assert harness.renderer.main_agent_id == second_id
    assert harness.lines()[-1] == f"new session {second_id} (the previous one stays stored)"
    await controller.handle_line("second question")
    await controller.wait()
    assert user_prompts(harness.model.requests[1].messages) == ["second question"]
    assert harness.sessions.get(first_id).title == "first question"
    assert harness.sessions.get(second_id).title == "second question"


async def test_an_error_in_a_command_is_printed_and_the_repl_goes_on(make_harness: MakeHarness) -> None:
    harness = make_harness([reply("still working")])
    controller = harness.controller
    await controller.open(None)
    session_id = controller.conversation.session_id
    harness.start_error = MissingCredentialsError(
        "OPENAI_API_KEY is not set", hint="export OPENAI_API_KEY=..."
    )
    assert await controller.handle_line("/clear")
    assert harness.lines()[-2:] == ["error: OPENAI_API_KEY is not set", "hint: export OPENAI_API_KEY=..."]
    assert controller.conversation.session_id == session_id
    await controller.handle_line("go on")
    await controller.wait()
    assert "still working" in harness.lines()


async def test_clear_is_refused_while_a_run_is_going(make_harness: MakeHarness) -> None:
    gate = Gate()
    harness = make_harness([gate.step(reply("done"))])
    controller = harness.controller
    await controller.open(None)
    session_id = controller.conversation.session_id
    await controller.handle_line("work")
    await gate.entered.wait()
    await controller.handle_line("/clear")
    assert harness.lines()[-1] == "a run is in progress: stop it with Esc first, then /clear"
    assert controller.conversation.session_id == session_id
    gate.release.set()
    await controller.wait()


# -- resume and shutdown ----------------------------------------------------------------------


async def test_a_resumed_session_keeps_its_history(make_harness: MakeHarness) -> None:
    harness = make_harness([reply("first"), reply("second")])
    await harness.controller.open(None)
    session_id = harness.controller.conversation.session_id
    await harness.controller.handle_line("remember 7")
    await harness.controller.wait()

    resumed = make_harness([reply("it was 7")])
    await resumed.controller.open(resumed.sessions.get(session_id))
    assert resumed.lines()[0].startswith(
        f"nestor · test:scripted · resumed {session_id} (2 messages, remember 7)"
    )
    await resumed.controller.handle_line("what was it?")
    await resumed.controller.wait()
    assert user_prompts(resumed.model.requests[0].messages) == ["remember 7", "what was it?"]
    assert resumed.sessions.get(session_id).title == "remember 7"


async def test_shutdown_stops_a_run_and_says_how_to_resume(make_harness: MakeHarness) -> None:
    gate = Gate()
    harness = make_harness([gate.step(reply("never"))])
    controller = harness.controller
    await controller.open(None)
    await controller.handle_line("long work")
    await gate.entered.wait()
    await controller.shutdown()
    assert not controller.busy
    assert harness.finished()[0].stop_reason == "cancelled"
    session_id = controller.conversation.session_id
    assert harness.lines()[-1] == f"resume this session with: nestor --resume {session_id}"


async def test_shutdown_of_an_unused_session_says_nothing(make_harness: MakeHarness) -> None:
    harness = make_harness()
    await harness.controller.open(None)
    before = harness.lines()
    await harness.controller.shutdown()
    assert harness.lines() == before


# -- /compact ---------------------------------------------------------------------------------


async def test_compact_summarises_with_the_focus_and_queues_prompts_meanwhile(
    make_harness: MakeHarness,
) -> None:
    gate = Gate()
    harness = make_harness([reply("first answer"), gate.step(reply("SUMMARY-OF-IT")), reply("after")])
    controller = harness.controller
    await controller.open(None)
    await controller.handle_line("start")
    await harness.wait_finished(1)

    await controller.handle_line("/compact the failing test")
    await gate.entered.wait()
    assert controller.busy
    assert "focus on: the failing test" in user_prompts(harness.model.requests[1].messages)[0]
    await controller.handle_line("go on")  # sent while compacting: runs right after
    assert "queued until the compaction ends" in harness.lines()
    gate.release.set()
    await harness.wait_finished(2)

    sent = harness.model.requests[2].messages
    assert "SUMMARY-OF-IT" in user_prompts(sent)[0] and user_prompts(sent)[-1] == "go on"
    assert any(line.startswith("⟳ context compacted") for line in harness.lines())


async def test_compact_can_be_stopped_and_leaves_the_history(make_harness: MakeHarness) -> None:
    gate = Gate()
    harness = make_harness([reply("first answer"), gate.step(reply("never"))])
    controller = harness.controller
    await controller.open(None)
    await controller.handle_line("start")
    await harness.wait_finished(1)
    before = list(harness.agent.history)

    await controller.handle_line("/compact")
    await gate.entered.wait()
    assert controller.cancel()
    await controller.wait()
    assert not controller.busy
    assert "compaction stopped; the history is unchanged" in harness.lines()
    assert harness.agent.history == before


async def test_compact_is_refused_while_a_run_is_going_and_with_nothing_to_compact(
    make_harness: MakeHarness,
) -> None:
    gate = Gate()
    harness = make_harness([gate.step(reply("done"))])
    controller = harness.controller
    await controller.open(None)
    await controller.handle_line("/compact")
    await controller.wait()
    assert "nothing to compact yet" in harness.lines()
    await controller.handle_line("start")
    await gate.entered.wait()
    await controller.handle_line("/compact")
    assert any("/compact when it is done" in line for line in harness.lines())
    gate.release.set()
    await harness.wait_finished(1)


async def test_clear_stops_what_the_previous_agent_left_running_in_the_background(
    make_harness: MakeHarness,
) -> None:
    harness = make_harness([reply("one")])
    controller = harness.controller
    await controller.open(None)
    previous = harness.agent
    stopped: list[str] = []
    # The agent tree listens like this to cancel an agent's sub-agents, background ones included.
    previous.add_cancel_listener(lambda: stopped.append(previous.session_id))
    await controller.handle_line("/clear")
    assert stopped == [previous.session_id]


async def test_agents_model_sessions_and_resume_answer_in_the_line_repl_as_in_the_tui(
    make_harness: MakeHarness,
) -> None:
    harness = make_harness([reply("one"), reply("two")])
    controller = harness.controller
    await controller.open(None)
    first_id = controller.conversation.session_id
    await controller.handle_line("first question")
    await controller.wait()
    await controller.handle_line("/clear")
    await controller.handle_line("second question")
    await controller.wait()
    second_id = controller.conversation.session_id

    await controller.handle_line("/agents")
    assert "explore" in harness.text() and "unknown command" not in harness.text()
    await controller.handle_line("/model")
    assert "this conversation runs on test:scripted" in harness.text()
    await controller.handle_line("/sessions")
    listed = harness.lines()[-3:]
    assert listed[0].startswith(f"  1* second question · {second_id} · idle · ")
    assert listed[1].startswith(f"  2  first question · {first_id} · idle · ")
    assert listed[2] == "go on in one with /resume N (or /resume ID); * is this one"
    await controller.handle_line("/resume 9")
    assert harness.lines()[-2:] == [
        "error: no session numbered 9",
        "hint: /sessions lists them, numbered from 1",
    ]

    await controller.handle_line("/resume 2")

    assert controller.conversation.session_id == first_id
    assert "2 messages, first question" in harness.text()
    await controller.handle_line(f"/resume {second_id}")
    assert controller.conversation.session_id == second_id
    await controller.handle_line("/resume 1")
    assert harness.lines()[-1] == f"already in session {second_id}"

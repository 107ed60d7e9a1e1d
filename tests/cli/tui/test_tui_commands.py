"""The TUI's slash commands: the REPL's, and /agents, /model, /sessions, /resume, /theme, /help."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList

from nestor.app import App
from nestor.cli.tui.dialogs import SessionPicker
from nestor.cli.tui.transcript import Note, TextBlock, ToolBlock
from nestor.testing import ServerReply, ServerToolCall, first_user_text
from tests.cli.tui.support import Running, running_tui
from tests.server_routes import Route, router


def notes(running: Running) -> str:
    main = running.tui.transcripts[running.tui.live_tree.main_id]
    return "\n".join(entry.text for entry in main.entries if isinstance(entry, Note))


async def command(running: Running, text: str, expected: str) -> None:
    await running.send(text)
    try:
        await running.until(lambda: expected in notes(running), timeout=10)
    except TimeoutError:
        raise AssertionError(f"{text}: no {expected!r} in:\n{notes(running)[-1500:]}") from None


async def test_help_lists_every_command_and_the_agents_and_model_commands_answer(tmp_path: Path) -> None:
    async with running_tui(tmp_path, [ServerReply(text="hi")]) as running:
        await command(running, "/help", "/resume")
        shown = notes(running)
        for name in (
            "/help",
            "/cost",
            "/session",
            "/clear",
            "/compact",
            "/exit",
            "/agents",
            "/model",
            "/sessions",
            "/theme",
        ):
            assert f"\n{name} " in "\n" + shown or shown.startswith(name), name
        assert "x stops it and its sub-agents" in shown

        await command(running, "/agents", "explore")
        await command(running, "/agents show explore", "prompt:")
        await command(running, "/agents create", "error: /agents create needs --description and --prompt")
        await command(
            running,
            '/agents create reviewer --description "reviews diffs" --prompt "You review diffs."',
            "/.nestor/agents/reviewer.md",
        )
        await command(running, "/model", "this conversation runs on scripted:large-model")
        await command(running, "/cost", "0 requests")

        assert running.tui.theme == "textual-dark"
        await running.send("/theme")
        assert running.tui.theme == "textual-light"
    written = tmp_path / "project" / ".nestor" / "agents" / "reviewer.md"
    assert "You review diffs." in written.read_text(encoding="utf-8")


async def answered_then_cleared(running: Running) -> str:
    """Send ``remember this``, wait for the answer, then ``/clear``; return the first session's id."""
    tui = running.tui
    await running.send("remember this")
    await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
    first = tui.controller.conversation.session_id
    await running.send("/clear")
    await running.until(lambda: tui.controller.conversation.session_id != first)
    return first


async def test_sessions_opens_the_picker_and_resume_continues_a_session(tmp_path: Path) -> None:
    routes: dict[str, list[ServerReply | Route]] = {
        "remember": [ServerReply(text="first answer"), ServerReply(text="second answer")]
    }
    async with running_tui(tmp_path, router(routes)) as running:
        tui = running.tui
        first = await answered_then_cleared(running)
        assert tui.live_tree.main_id == tui.controller.conversation.session_id

        await running.send("/sessions")
        # Drawn, not only pushed: a pushed screen composes a moment later.
        await running.until(
            lambda: isinstance(tui.screen, SessionPicker) and bool(tui.screen.query(OptionList))
        )
        await running.pilot.press("escape")
        await running.until(lambda: not isinstance(tui.screen, SessionPicker))
        assert tui.controller.conversation.session_id != first  # Esc picks nothing

        await running.send(f"/resume {first}")
        await running.until(lambda: tui.controller.conversation.session_id == first)
        await running.until(lambda: "resumed " + first in notes(running))  # the note comes at the next tick
        await running.send("and now?")
        await running.until(
            lambda: any(
                isinstance(e, TextBlock) and e.text == "second answer" for e in tui.transcripts[first].entries
            )
        )
        [last] = [r for r in running.server.requests if first_user_text(r) == "remember this"][-1:]
        sent = [m["content"] for m in last["messages"] if m["role"] == "user"]
    assert sent == ["remember this", "and now?"]


async def test_the_session_picker_resumes_the_session_chosen_with_enter(tmp_path: Path) -> None:
    # It showed the resumed main agent as 'idle · 0 tools · 0 tok · cost unknown', and no history.
    routes: dict[str, list[ServerReply | Route]] = {
        "remember": [ServerReply(tool_calls=(ServerToolCall("ls", {}),)), ServerReply(text="first answer")]
    }
    async with running_tui(tmp_path, router(routes)) as running:
        tui = running.tui
        first = await answered_then_cleared(running)
        await running.send("/resume")  # without an id: the picker, newest first
        await running.until(
            lambda: isinstance(tui.screen, SessionPicker) and bool(tui.screen.query(OptionList))
        )
        picker = tui.screen
        assert isinstance(picker, SessionPicker)
        listed = [option.id for option in picker.query_one(OptionList).options]
        assert first in listed
        picker.query_one(OptionList).highlighted = listed.index(first)
        await running.pilot.press("enter")
        # The controller switches first, the screen follows it after (the history read from the store).
        await running.until(lambda: tui.live_tree.main_id == first)
        assert tui.controller.conversation.session_id == first
        stored = tui.nestor.sessions.get(first).usage
        main = tui.live_tree.agents[first]
        assert (main.tools, main.usage.total_tokens, main.usage.cost_usd) == (
            1,
            stored.total_tokens,
            stored.cost_usd,
        )
        assert stored.total_tokens > 0
        entries = tui.transcripts[first].entries
        assert [entry.text for entry in entries if isinstance(entry, TextBlock)] == [
            "remember this",
            "first answer",
        ]
        [call] = [entry for entry in entries if isinstance(entry, ToolBlock)]
        assert (call.name, call.outcome) == ("ls", "success")
        await running.until(lambda: len(tui.pane.children) == len(entries))  # on screen too


async def test_a_session_left_before_its_first_prompt_is_not_kept(tmp_path: Path) -> None:
    async with running_tui(tmp_path, [ServerReply(text="hi")]) as running:
        tui = running.tui
        settings = tui.nestor.settings
        unused = tui.controller.conversation.session_id
        await running.send("/clear")
        await running.until(lambda: tui.controller.conversation.session_id != unused)
        assert unused not in {session.id for session in tui.nestor.project_sessions()}
        await running.send("hello")
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        used = tui.controller.conversation.session_id
        await running.send("/clear")
        await running.until(lambda: tui.controller.conversation.session_id != used)
    reopened = App.open(settings)
    try:
        assert [session.id for session in reopened.project_sessions()] == [used]
    finally:
        reopened.close()

"""The TUI driven headless by Textual's Pilot over a real app: answers, permissions, the agent tree."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Button, Markdown, Static

from nestor.app.mcp_approvals import pending_servers, project_servers
from nestor.cli.tui.dialogs import PermissionScreen
from nestor.cli.tui.live_tree import LiveTree
from nestor.cli.tui.panes import AgentTreePanel, ConversationPane, ToolCallView
from nestor.cli.tui.transcript import TextBlock
from nestor.core.events import AgentFinished, AgentStarted, TextDelta
from nestor.testing import ServerReply, ServerToolCall
from tests.app.test_conversation_tree import slow_and_quick
from tests.cli.test_mcp_e2e import GH_AGENT
from tests.cli.tui.support import running_tui, task_call, three_explorers
from tests.server_routes import Route, router
from tests.tools.mcp.support import DEMO_SERVER


async def test_the_final_answer_is_rendered_as_markdown(tmp_path: Path) -> None:
    script = [ServerReply(text="The answer is **42**.\n\n```python\nprint(42)\n```\n", chunks=4)]
    async with running_tui(tmp_path, script) as running:
        await running.send("what is the answer?")
        tui = running.tui
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        await running.pilot.pause(0.2)
        pane = tui.query_one(ConversationPane)
        sources = [widget.source for widget in pane.query(Markdown)]
        prompts = [e.text for e in pane.transcript.entries if isinstance(e, TextBlock) and e.user]
    assert prompts == ["what is the answer?"]
    assert sources == ["The answer is **42**.\n\n```python\nprint(42)\n```\n"]


def _general_writes(answer_text: str) -> dict[str, list[ServerReply | Route]]:
    return {
        "USER": [
            ServerReply(tool_calls=(task_call("write the notes", "NOTES: write notes.txt"),)),
            ServerReply(text=answer_text),
        ],
        "NOTES": [
            ServerReply(tool_calls=(ServerToolCall("write", {"path": "notes.txt", "content": "hi\n"}),)),
            ServerReply(text="done writing"),
        ],
    }


@pytest.mark.parametrize(("key", "written"), [("y", True), ("a", True), ("n", False)])
async def test_a_sub_agents_permission_question_is_a_dialog_and_its_answer_is_honoured(
    tmp_path: Path, key: str, written: bool
) -> None:
    async with running_tui(tmp_path, router(_general_writes("The notes are handled."))) as running:
        tui = running.tui
        await running.send("USER: write the notes")
        dialog = await running.question()
        shown = " ".join(str(widget.render()) for widget in dialog.query(Static))
        assert "general · write the notes asks" in shown
        assert f'allow = ["write({tmp_path / "project" / "notes.txt"})"]' in shown
        assert [str(button.label) for button in dialog.query(Button)] == [
            "[y] allow once",
            "[a] allow for this agent's session",
            "[n] deny",
        ]
        child = next(agent for agent in tui.live_tree.agents.values() if agent.depth == 1)
        assert child.state == "waiting" and "waiting for permission" in child.counters(0)
        await running.pilot.press(key)
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        assert not isinstance(tui.screen, PermissionScreen)
    notes = tmp_path / "project" / "notes.txt"
    assert notes.exists() is written
    assert child.state == "done"


async def test_a_project_agents_mcp_server_is_a_yes_no_dialog_showing_its_definition(tmp_path: Path) -> None:
    (tmp_path / "project" / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / "project" / ".claude" / "agents" / "gh.md").write_text(GH_AGENT)
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(task_call("ask", "ASK: ask it", subagent_type="gh"),)),
            ServerReply(text="ok"),
        ],
        "ASK": [ServerReply(text="asked")],
    }
    async with running_tui(tmp_path, router(routes)) as running:
        tui = running.tui
        await running.send("USER: use gh")

        def drawn() -> bool:
            return isinstance(tui.screen, PermissionScreen) and len(tui.screen.query(Button)) == 2

        await running.until(drawn)
        dialog = tui.screen
        shown = " ".join(str(widget.render()) for widget in dialog.query(Static))
        assert "Start MCP server mine (defined by agent gh (" in shown and str(DEMO_SERVER) in shown
        assert [str(button.label) for button in dialog.query(Button)] == ["[y] yes", "[n] no"]
        await running.pilot.press("a")  # not offered: the question stays
        await running.pilot.pause(0.1)
        assert tui.screen is dialog
        await running.pilot.press("y")
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        settings = tui.nestor.settings
    assert pending_servers(settings, project_servers(settings, {"HOME": str(tmp_path)})) == []


async def test_cancelling_one_sub_agent_from_the_tree_stops_it_alone(tmp_path: Path) -> None:
    async with running_tui(tmp_path, router(slow_and_quick())) as running:
        tui = running.tui
        await running.send("USER: two things")
        tree = tui.live_tree
        await running.until(lambda: len(tree.running()) == 3)
        panel = tui.query_one(AgentTreePanel)
        panel.focus()
        slow = next(agent for agent in tree.agents.values() if agent.description == "slow one")
        quick = next(agent for agent in tree.agents.values() if agent.description == "quick one")
        await running.until(lambda: slow.agent_id in panel.agent_ids)
        panel.highlight(slow.agent_id)
        await running.pilot.press("x")
        await running.until(lambda: slow.state == "cancelled")
        assert quick.running  # the other sub-agent goes on
        await running.until(lambda: tree.agents[tree.main_id].state == "done")
        await running.pilot.pause(0.2)
        sources = [widget.source for widget in tui.query_one(ConversationPane).query(Markdown)]
    assert (slow.state, quick.state) == ("cancelled", "done")
    assert sources[-1] == "One was stopped, the other answered."


async def test_a_prompt_sent_while_busy_is_queued_and_esc_stops_the_turn(tmp_path: Path) -> None:
    routes: dict[str, list[ServerReply | Route]] = {"USER": [ServerReply(text="too late", delay=30)]}
    async with running_tui(tmp_path, router(routes)) as running:
        tui = running.tui
        main = tui.live_tree.main_id
        await running.send("USER: take your time")
        await running.until(lambda: tui.live_tree.agents[main].state == "running")
        await running.send("and then this")
        transcript = tui.transcripts[main]
        await running.until(lambda: TextBlock("and then this", user=True) in transcript.entries)
        await running.pilot.press("escape")
        await running.until(lambda: tui.live_tree.agents[main].state == "cancelled")
        await running.until(
            lambda: any(getattr(e, "text", "").startswith("⏹ interrupted") for e in transcript.entries)
        )
    assert not tui.controller.busy


async def test_the_todo_panel_shows_the_main_agents_list(tmp_path: Path) -> None:
    todos = [
        {"content": "Read the parser", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress"},
    ]
    script = [
        ServerReply(tool_calls=(ServerToolCall("todo_write", {"todos": todos}),)),
        ServerReply(text="Working on it."),
    ]
    async with running_tui(tmp_path, script) as running:
        tui = running.tui
        assert not tui.todos.display  # no list yet
        await running.send("fix the parser")
        await running.until(lambda: tui.todos.display)
        shown = str(tui.todos.render())
    assert shown.splitlines() == ["  ☑ Read the parser", "  ◐ Fix the bug"]


async def test_an_edit_is_shown_as_a_diff(tmp_path: Path) -> None:
    edit = {"path": "a.py", "old_string": "x = 1\n", "new_string": "x = 2\n"}
    script = [ServerReply(tool_calls=(ServerToolCall("edit", edit),)), ServerReply(text="Changed.")]
    async with running_tui(tmp_path, script) as running:
        tui = running.tui
        (tmp_path / "project" / "a.py").write_text("x = 1\n", encoding="utf-8")
        await running.send("set x to 2")
        await running.question()
        await running.pilot.press("y")
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        await running.pilot.pause(0.2)
        [block] = tui.pane.query(ToolCallView)
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(block.render())
        drawn = console.export_text()
    assert block.expanded and "✓" in drawn.splitlines()[0]
    assert "-x = 1" in drawn and "+x = 2" in drawn
    assert (tmp_path / "project" / "a.py").read_text(encoding="utf-8") == "x = 2\n"


async def test_switching_the_theme_redraws_the_agent_tree_in_the_new_theme(tmp_path: Path) -> None:
    async with running_tui(tmp_path, router(three_explorers("Found all three."))) as running:
        tui = running.tui
        await running.send("USER: where are alpha, beta and gamma?")
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        panel = tui.query_one(AgentTreePanel)
        await running.pilot.pause(0.6)  # the tree's last redraw, in the dark theme
        dark = panel.render_line(0)
        await running.pilot.press("ctrl+t")
        await running.pilot.pause(0.2)
        light = panel.render_line(0)
        assert tui.theme == "textual-light"
        backgrounds = {segment.style.bgcolor for segment in light if segment.style is not None}
        assert backgrounds == {panel.rich_style.bgcolor}
        assert light.text == dark.text and backgrounds != {
            segment.style.bgcolor for segment in dark if segment.style is not None
        }


async def test_the_prompts_cursor_does_not_blink_while_the_agents_work(tmp_path: Path) -> None:
    # Each blink is a frame drawn while the agents wait for the CPU; idle, the cursor blinks again.
    async with running_tui(tmp_path, [ServerReply(text="Done.", delay=1.0)]) as running:
        tui = running.tui
        assert tui.editor.cursor_blink
        await running.send("take a second")
        await running.until(lambda: tui.controller.busy)
        await running.pilot.pause(0.2)
        blinking_while_busy = tui.editor.cursor_blink
        await running.until(lambda: not tui.controller.busy)
        await running.pilot.pause(0.2)
    assert not blinking_while_busy and tui.editor.cursor_blink


async def test_a_background_sub_agent_is_marked_in_the_tree(tmp_path: Path) -> None:
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(task_call("scan", "SCAN: look around", run_in_background=True),)),
            ServerReply(text="Started."),
            ServerReply(text="The scan is done."),
        ],
        "SCAN": [ServerReply(text="nothing found", delay=0.5)],
        "QUIET": [ServerReply(text="ok")],
    }
    async with running_tui(tmp_path, router(routes)) as running:
        tui = running.tui
        await running.send("USER: scan in the background")
        panel = tui.query_one(AgentTreePanel)
        await running.until(lambda: len(panel.agent_ids) == 2)
        lines = [panel.render_line(y).text for y in range(4)]
    assert "⇢" in lines[2] and "scan" in lines[2]  # the sub-agent's first line
    assert "⇢" not in lines[0]  # the main agent's


async def test_the_agent_tree_grows_its_scrollable_height_in_steps(tmp_path: Path) -> None:
    # A new scrollable height is a new layout of the whole screen: not at every agent that starts.
    async with running_tui(tmp_path, [], size=(80, 24)) as running:
        panel = running.tui.agent_panel
        tree = LiveTree("main")
        tree.handle(AgentStarted(agent_id="main"))
        heights: list[int] = []
        for count in range(1, 16):
            tree.handle(AgentStarted(agent_id=f"a{count}", parent_id="main", depth=1, description=str(count)))
            panel.redraw(tree, 0.0)
            await running.pilot.pause()
            heights.append(panel.virtual_size.height)
        visible = panel.size.height
    assert visible < 2 * 16  # the tree does not fit
    assert heights[0] == visible  # one agent and the main agent fit: no scrolling
    assert set(heights[-3:]) == {40}  # 28 to 32 lines: rounded up to 40, one height for all
    assert all(height == visible or height % 20 == 0 for height in heights)
    assert len(set(heights)) <= 3


async def test_while_several_agents_run_the_transcript_is_redrawn_only_with_the_tree(tmp_path: Path) -> None:
    # Each frame is time the agents wait for: with two at work, the main agent's text waits for the
    # tree's next redraw (an hour away here); once they are done, it is drawn at the next tick.
    async with running_tui(tmp_path, [], redraw_s=3600) as running:
        tui = running.tui
        main = tui.live_tree.main_id
        for sub in ("sub-1", "sub-2"):
            tui.nestor.bus.publish(AgentStarted(agent_id=sub, parent_id=main, depth=1, agent_type="explore"))
        tui.nestor.bus.publish(TextDelta(agent_id=main, text="Meanwhile, the main agent writes."))
        await running.pilot.pause(0.4)  # five ticks
        while_crowded = [widget.source for widget in tui.pane.query(Markdown)]
        for sub in ("sub-1", "sub-2"):
            tui.nestor.bus.publish(AgentFinished(agent_id=sub, stop_reason="completed", result="done"))
        await running.pilot.pause(0.4)
        afterwards = [widget.source for widget in tui.pane.query(Markdown)]
    assert len(tui.live_tree.agents) == 3
    assert while_crowded == []
    assert afterwards == ["Meanwhile, the main agent writes."]


async def test_tab_from_the_tree_returns_to_the_prompt_after_an_agent_was_shown(tmp_path: Path) -> None:
    # Tab then Enter on an agent, then Tab: the focus went to the conversation and its tool calls,
    # what was typed was lost, and it took three more Tabs to reach the prompt.
    script = [ServerReply(tool_calls=(ServerToolCall("ls", {}),)), ServerReply(text="listed")]
    async with running_tui(tmp_path, script) as running:
        tui = running.tui
        await running.send("list the files")
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        await running.until(lambda: bool(tui.pane.query(ToolCallView)))
        await running.pilot.press("tab")
        assert tui.focused is tui.agent_panel
        await running.pilot.press("enter")
        await running.pilot.press("tab")
        await running.pilot.press("h", "i")
        assert tui.focused is tui.editor
        assert tui.editor.text == "hi"
        await running.pilot.press("shift+tab")  # the transcript's tool calls stay in reach
        assert isinstance(tui.focused, ToolCallView)

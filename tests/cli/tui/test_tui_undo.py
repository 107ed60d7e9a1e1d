"""Undo in the full-screen UI: ``u`` on a sub-agent of the tree, and ``/undo``, each confirmed in a dialog."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from nestor.cli.tui.dialogs import ConfirmScreen
from nestor.cli.tui.panes import AgentTreePanel
from nestor.cli.tui.transcript import Note
from nestor.testing import ServerReply, ServerToolCall
from tests.app.test_checkpoints import ALLOW
from tests.cli.tui.support import Running, running_tui, task_call
from tests.server_routes import Route, router


def write(path: str, content: str) -> ServerReply:
    return ServerReply(tool_calls=(ServerToolCall("write", {"path": path, "content": content}),))


async def confirm(running: Running) -> str:
    """Wait for the undo's dialog and return its question."""
    await running.until(
        lambda: isinstance(running.tui.screen, ConfirmScreen) and bool(running.tui.screen.query(Static))
    )
    screen = running.tui.screen
    assert isinstance(screen, ConfirmScreen)
    return screen.question


def notes(running: Running) -> str:
    transcript = running.tui.transcripts[running.tui.live_tree.main_id]
    return "\n".join(entry.text for entry in transcript.entries if isinstance(entry, Note))


async def test_u_on_a_sub_agent_undoes_its_changes_alone_after_a_yes(tmp_path: Path) -> None:
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(
                tool_calls=(task_call("writes a", "AGENT-A: write"), task_call("writes b", "AGENT-B: write"))
            ),
            ServerReply(text="both written"),
        ],
        "AGENT-A": [write("a.txt", "from a\n"), ServerReply(text="a done")],
        "AGENT-B": [write("b.txt", "from b\n"), ServerReply(text="b done")],
    }
    project = tmp_path / "project"
    async with running_tui(tmp_path, router(routes), config=f"\n{ALLOW}") as running:
        tui = running.tui
        await running.send("USER: write both")
        tree = tui.live_tree
        await running.until(lambda: tree.agents[tree.main_id].state == "done" and not tui.controller.busy)
        b = next(agent for agent in tree.agents.values() if agent.description == "writes b")
        panel = tui.query_one(AgentTreePanel)
        panel.focus()
        await running.until(lambda: b.agent_id in panel.agent_ids)
        panel.highlight(b.agent_id)

        await running.pilot.press("u")
        question = await confirm(running)
        assert question.startswith("undo agent general (writes b): put back b.txt?")
        await running.pilot.press("n")
        await running.until(lambda: not tui.controller.undoing)
        assert (project / "b.txt").exists()

        await running.pilot.press("u")
        await confirm(running)
        await running.pilot.press("y")
        await running.until(lambda: not tui.controller.undoing)
        await running.until(lambda: "undone: agent general (writes b)" in notes(running))

    assert not (project / "b.txt").exists()
    assert (project / "a.txt").read_text() == "from a\n"


async def test_slash_undo_puts_back_the_files_and_the_conversation_starts_again(tmp_path: Path) -> None:
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [write("new.txt", "x\n"), ServerReply(text="written")]
    }
    project = tmp_path / "project"
    async with running_tui(tmp_path, router(routes), config=f"\n{ALLOW}") as running:
        tui = running.tui
        await running.send("USER: write it")
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        before = tui.controller.conversation
        await running.send("/undo")
        question = await confirm(running)
        assert "put back new.txt and cut the conversation back?" in question
        await running.pilot.press("y")
        await running.until(lambda: tui.controller.conversation is not before)
        await running.until(lambda: "is back to before prompt 1" in notes(running))
        assert tui.controller.conversation.message_count == 0
    assert not (project / "new.txt").exists()

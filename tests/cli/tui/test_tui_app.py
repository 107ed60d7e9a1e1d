"""The TUI driven headless by Textual's Pilot over a real app: answers, permissions, the agent tree."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Markdown

from nestor.cli.tui.panes import ConversationPane
from nestor.cli.tui.transcript import TextBlock
from nestor.testing import ServerReply
from tests.cli.tui.support import running_tui


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

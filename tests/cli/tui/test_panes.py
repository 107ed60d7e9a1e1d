"""The TUI's panes driven headless over a real app: the conversation pane follows its end."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import Markdown

from nestor.cli.tui.panes import ConversationPane
from nestor.cli.tui.transcript import Transcript
from nestor.testing import ServerReply
from tests.cli.tui.support import running_tui


async def test_the_conversation_follows_its_end_when_layout_settles_after_a_long_note(tmp_path: Path) -> None:
    # Seen at 120x40: /help, /session, /help, /cost left the view in the middle of the second help,
    # and a prompt's answer afterwards never came into view. A note that first overflows the pane
    # brings its scrollbar, which narrows the pane and wraps the lines again: the end moved after
    # the pane had scrolled to it, and the pane stopped following.
    async with running_tui(
        tmp_path, [ServerReply(text="the answer comes into view")], size=(120, 40)
    ) as running:
        tui = running.tui
        pane = tui.query_one(ConversationPane)
        main = tui.transcripts[tui.live_tree.main_id]

        def at_end() -> bool:
            return pane.max_scroll_y > 0 and pane.scroll_y == pane.max_scroll_y

        await running.pilot.pause(0.2)
        line = ("word " * pane.scrollable_content_region.width)[
            : pane.scrollable_content_region.width
        ].strip()
        main.note("\n".join([line] * pane.size.height))  # fits its width until the scrollbar comes
        await running.until(at_end, timeout=3)
        main.note("a short note after it")
        await running.until(at_end, timeout=3)
        await running.send("hello")
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        await running.until(
            lambda: bool(pane.query(Markdown)) and pane.query(Markdown).last().region.height > 0
        )
        await running.until(at_end, timeout=3)
        answer = pane.query(Markdown).last()
        assert answer.source == "the answer comes into view"
        assert pane.region.y <= answer.region.y and answer.region.bottom <= pane.region.bottom


async def test_a_pane_scrolled_up_stays_put_until_scrolled_back_to_the_end(tmp_path: Path) -> None:
    async with running_tui(tmp_path, [], size=(120, 40)) as running:
        tui = running.tui
        pane = tui.query_one(ConversationPane)
        main = tui.transcripts[tui.live_tree.main_id]
        main.note("\n".join(f"line {number}" for number in range(80)))
        await running.until(lambda: pane.max_scroll_y > 0 and pane.scroll_y == pane.max_scroll_y, timeout=3)
        pane.focus()
        await running.pilot.press("home")
        await running.until(lambda: pane.scroll_y == 0, timeout=3)
        main.note("more output")
        await running.pilot.pause(0.5)
        assert pane.scroll_y == 0
        await running.pilot.press("end")
        shown = len(pane.children)
        main.note("and more")
        await running.until(
            lambda: len(pane.children) > shown and pane.children[-1].region.height > 0, timeout=3
        )
        await running.until(lambda: pane.scroll_y == pane.max_scroll_y, timeout=3)


async def test_a_transcript_that_grows_while_it_is_being_shown_is_drawn_once(tmp_path: Path) -> None:
    # Seen in CI: after /resume from the picker, the pane held one child more than the resumed
    # transcript's entries. The picker's callback showed the transcript while the tick drew the
    # note added to it meanwhile: the tick appended the note, and show() drew every entry again.
    async with running_tui(tmp_path, []) as running:
        tui = running.tui
        pane = tui.query_one(ConversationPane)
        main = tui.transcripts[tui.live_tree.main_id]
        main.note("the session before")
        await running.until(lambda: len(pane.children) == len(main.entries))
        resumed = Transcript()  # more entries than the pane shows now
        stored = [f"stored {number}" for number in range(len(main.entries) + 3)]
        for text in stored:
            resumed.note(text)
        showing = asyncio.create_task(pane.show(resumed))
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # show() is removing the earlier entries' widgets
        resumed.note("resumed session")
        await pane.sync()
        await showing
        await running.pilot.pause(0.2)
        assert [str(child.render()) for child in pane.children] == [*stored, "resumed session"]

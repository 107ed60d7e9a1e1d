"""An agent's transcript from its events: streamed text, tool blocks, notes, edit diffs."""

from __future__ import annotations

from nestor.cli.tui.transcript import Note, TextBlock, ToolBlock, Transcript, edit_diff
from nestor.core.events import PermissionAsked, PromptQueued, TextDelta, ToolFinished, ToolStarted


def test_text_streams_into_one_block_and_tool_calls_finish_in_place() -> None:
    transcript = Transcript()
    for piece in ("Looking ", "at **it**."):
        transcript.handle(TextDelta(agent_id="a", text=piece))
    assert transcript.take_changes() == {0}
    transcript.handle(
        ToolStarted(agent_id="a", tool_call_id="c1", tool_name="grep", args={"pattern": "def login"})
    )
    transcript.handle(TextDelta(agent_id="a", text="Found it."))
    transcript.handle(
        ToolFinished(
            agent_id="a", tool_call_id="c1", tool_name="grep", preview="src/auth.py:1", duration_s=0.25
        )
    )
    transcript.handle(PromptQueued(agent_id="a", prompt="and the tests?"))
    transcript.handle(
        PermissionAsked(
            agent_id="a",
            tool_call_id="c2",
            tool_name="bash",
            target="rm -rf x",
            decision="deny",
            reason="a deny rule",
        )
    )
    entries = transcript.entries
    assert entries[0] == TextBlock("Looking at **it**.")
    tool = entries[1]
    assert (
        isinstance(tool, ToolBlock)
        and tool.summary == "● grep def login ✓ 0.2s"
        and tool.preview == "src/auth.py:1"
    )
    assert entries[2] == TextBlock("Found it.")
    assert entries[3] == TextBlock("and the tests?", user=True)
    assert entries[4] == Note("⊘ denied bash: rm -rf x (a deny rule)", "red")
    assert transcript.take_changes() == {1, 2, 3, 4} and transcript.take_changes() == set()


def test_edits_and_writes_are_shown_as_diffs() -> None:
    diff = edit_diff("edit", {"path": "src/a.py", "old_string": "x = 1\n", "new_string": "x = 2\n"})
    assert diff is not None and diff.splitlines() == [
        "--- a/src/a.py",
        "+++ b/src/a.py",
        "@@ -1 +1 @@",
        "-x = 1",
        "+x = 2",
    ]
    created = edit_diff("write", {"path": "new.txt", "content": "hello\n"})
    assert created is not None and created.splitlines()[-1] == "+hello"
    assert edit_diff("grep", {"pattern": "x"}) is None
    long = edit_diff("write", {"path": "big.txt", "content": "\n".join(str(n) for n in range(100))})
    assert long is not None and long.splitlines()[-1] == "… 63 more lines"

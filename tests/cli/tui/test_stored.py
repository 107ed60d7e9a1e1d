"""A stored conversation as the TUI's transcript: prompts, text, tool calls and their outcomes."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from nestor.cli.tui.stored import PREVIEW_CHARS, stored_transcript
from nestor.cli.tui.transcript import Note, TextBlock, ToolBlock
from nestor.runtime.kernel.compaction_mark import CompactionMark

SUMMARY = CompactionMark(kept_messages=0, summarized_messages=4, trigger="threshold", tokens_before=9000)


@pytest.mark.filterwarnings("ignore:`RetryPromptPart` is deprecated")  # sessions stored before hold it
def test_prompts_text_and_calls_come_back_in_order_and_a_summary_is_left_out() -> None:
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("look around")]),
        ModelResponse(parts=[TextPart("Listing."), ToolCallPart("ls", {"path": "."}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("ls", "x" * 1000, tool_call_id="c1", outcome="success")]),
        ModelResponse(parts=[ToolCallPart("view", "{not json", tool_call_id="c2")]),
        ModelRequest(parts=[RetryPromptPart("bad arguments", tool_name="view", tool_call_id="c2")]),
        ModelRequest(parts=[UserPromptPart("the summary")], metadata=SUMMARY.to_metadata()),
        ModelResponse(parts=[TextPart("Done.")]),
    ]

    transcript, tools = stored_transcript(messages, earlier=3)

    entries = transcript.entries
    assert isinstance(entries[0], Note) and entries[0].text.startswith("… 3 earlier messages")
    assert [(type(entry).__name__, getattr(entry, "text", "")) for entry in entries[1:]] == [
        ("TextBlock", "look around"),
        ("TextBlock", "Listing."),
        ("ToolBlock", ""),
        ("ToolBlock", ""),
        ("TextBlock", "Done."),
    ]
    assert isinstance(entries[1], TextBlock) and entries[1].user
    ls, view = entries[3], entries[4]
    assert isinstance(ls, ToolBlock) and isinstance(view, ToolBlock)
    assert (ls.outcome, ls.args, len(ls.preview)) == ("success", {"path": "."}, PREVIEW_CHARS)
    assert view.outcome == "retried"
    assert "bad arguments" in view.preview
    assert tools == 2
    assert transcript.take_changes() == set(range(len(entries)))  # the pane draws them all

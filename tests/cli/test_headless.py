"""The progress printers of ``nestor run``, fed events directly."""

from __future__ import annotations

import io
import json

from nestor.cli.headless import _event_printer
from nestor.core.events import Compacted, PermissionAsked, Retrying, TextDelta, ToolStarted


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_text_mode_on_a_terminal_shows_tools_retries_and_denials_on_stderr() -> None:
    out, err = io.StringIO(), Terminal()
    printer = _event_printer("text", out, err)
    printer(ToolStarted(agent_id="a", tool_call_id="c", tool_name="bash", args={"command": "git status"}))
    printer(Retrying(agent_id="a", attempt=1, delay_s=2.0, reason="HTTP 429 (rate limited)"))
    printer(
        PermissionAsked(
            agent_id="a", tool_call_id="c", tool_name="bash", target="rm x", decision="deny", reason="r"
        )
    )
    printer(
        Compacted(
            agent_id="a",
            trigger="overflow",
            tokens_before=150_000,
            tokens_after=20_000,
            summarized_messages=40,
            kept_messages=2,
            duration_s=3.0,
        )
    )
    printer(TextDelta(agent_id="a", text="answer text"))
    assert err.getvalue().splitlines() == [
        "· bash git status",
        "· retrying in 2.0s: HTTP 429 (rate limited)",
        "· denied bash: rm x (r)",
        "· context compacted: 150.0k → 20.0k tokens; 40 messages summarised, 2 kept · summary 0 in, 0 out, "
        "cost unknown · 3.0s",
    ]
    assert out.getvalue() == ""  # the answer is printed once, at the end


def test_text_mode_when_piped_prints_no_progress() -> None:
    out, err = io.StringIO(), io.StringIO()
    _event_printer("text", out, err)(ToolStarted(agent_id="a", tool_call_id="c", tool_name="ls"))
    assert err.getvalue() == "" and out.getvalue() == ""


def test_stream_json_prints_each_event_as_one_line() -> None:
    out, err = io.StringIO(), io.StringIO()
    _event_printer("stream-json", out, err)(TextDelta(agent_id="a", text="hi"))
    assert json.loads(out.getvalue())["text"] == "hi"

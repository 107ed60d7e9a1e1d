"""What streams to the screen from a local model: text as it comes, tool calls never."""

from __future__ import annotations

from nestor.providers.local.visible_text import VisibleText

TOOLS = ("grep", "view")


def stream(pieces: list[str], tools: tuple[str, ...] = TOOLS) -> tuple[list[str], str]:
    """Feed ``pieces``; return what was shown during the stream, and everything shown at the end."""
    visible = VisibleText(tools)
    during: list[str] = []
    for piece in pieces:
        during.extend(visible.feed(piece))
    return during, "".join(during + visible.finish())


def test_plain_text_streams_as_it_comes() -> None:
    during, total = stream(["The answer ", "is 42", ".\nDone."])
    assert during == ["The answer ", "is 42", ".\nDone."]
    assert total == "The answer is 42.\nDone."


def test_a_fenced_call_is_held_then_hidden() -> None:
    pieces = ["Let me look.\n", "```json\n", '{"name": "grep", ', '"arguments": {"pattern": "x"}}\n', "```"]
    during, total = stream(pieces)
    assert "".join(during) == "Let me look.\n"
    assert total == "Let me look.\n"


def test_a_fenced_block_that_is_not_a_call_is_shown_once_complete() -> None:
    pieces = ["Example:\n", "```python\n", "print('hi')\n", "```", "\nThat prints hi."]
    during, total = stream(pieces)
    assert "".join(during[:1]) == "Example:\n"
    assert total == "Example:\n```python\nprint('hi')\n```\nThat prints hi."


def test_json_is_plain_text_when_the_request_has_no_tools() -> None:
    during, _ = stream(['{"a": 1}'], tools=())
    assert during == ['{"a": 1}']


def test_the_start_of_a_call_tag_is_held_back() -> None:
    visible = VisibleText(TOOLS)
    assert visible.feed("Checking <tool") == ["Checking "]
    assert visible.finish() == ["<tool"]  # the tag never completed: it was text after all


def test_an_unclosed_fence_is_decided_at_the_end() -> None:
    _, total = stream(["```json\n", '{"name": "grep", "arguments": {"pattern": "y"}}'])
    assert total == ""
    _, total = stream(["```\n", "not json at all"])
    assert total == "```\nnot json at all"

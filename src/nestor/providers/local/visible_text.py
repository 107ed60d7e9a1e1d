"""What the user sees of a local model's output while it streams: the text, without its tool calls.

Calls that open the output (a tag, a JSON object, a fenced JSON block) are caught by the model
layer before they reach this filter (see ``model.call_intent``). A fenced block later in the text
may still be a call: it is held back until it is complete, then hidden when it is a call to a
known tool and shown as written otherwise. The start of a call tag or a fence is held back too,
so neither flickers on screen before it is recognised.
"""

from __future__ import annotations

from collections.abc import Collection

from nestor.providers.local.tool_calls import parse_tool_calls

TOOL_CALL_OPEN = "<tool_call>"
TOOL_RESPONSE_OPEN = "<tool_response>"
_FENCE = "```"


class VisibleText:
    """Feed generated text in; get back the text to show now.

    Args:
        tool_names: The tools of the request; only calls to these are hidden.

    """

    def __init__(self, tool_names: Collection[str]) -> None:
        self._tool_names = tool_names
        self._held = ""
        self._mode = "text"  # text <-> fence

    def feed(self, piece: str) -> list[str]:
        """Take the next generated piece; return the text that can be shown now (maybe none)."""
        self._held += piece
        shown: list[str] = []
        while True:
            before = (self._mode, len(self._held))
            if self._mode == "text":
                shown.append(self._release_text())
            elif self._mode == "fence":
                shown.append(self._release_fence())
            if (self._mode, len(self._held)) == before:
                break
        return [text for text in shown if text]

    def abandon(self) -> str:
        """Give up the held text (a call starts inside it) and return it, for the caller to sort out."""
        held, self._held = self._held, ""
        self._mode = "text"
        return held

    def finish(self) -> list[str]:
        """The generation ended: return what is left to show."""
        held, self._held = self._held, ""
        if self._mode == "fence" and parse_tool_calls(held, self._tool_names).calls:
            return []
        return [held] if held else []

    def _release_text(self) -> str:
        """In plain text: show everything up to a fence (then hold it) or a possible tag start."""
        fence = _fence_at_line_start(self._held)
        if fence != -1:
            shown, self._held = self._held[:fence], self._held[fence:]
            self._mode = "fence"
            return shown
        keep = _partial_suffix(self._held, (TOOL_CALL_OPEN, TOOL_RESPONSE_OPEN, _FENCE))
        cut = len(self._held) - keep
        shown, self._held = self._held[:cut], self._held[cut:]
        return shown

    def _release_fence(self) -> str:
        """In a fenced block: wait for its closing fence, then show it unless it is a call."""
        opening_end = self._held.find("\n")
        if opening_end == -1:
            return ""
        closing = self._held.find("\n" + _FENCE, opening_end)
        if closing == -1:
            return ""
        end = closing + 1 + len(_FENCE)
        block, self._held = self._held[:end], self._held[end:]
        self._mode = "text"
        if self._tool_names and parse_tool_calls(block, self._tool_names).calls:
            return ""
        return block


def _fence_at_line_start(text: str) -> int:
    """Index of the first ``` that starts a line, or -1."""
    index = text.find(_FENCE)
    while index != -1:
        if index == 0 or text[index - 1] == "\n":
            return index
        index = text.find(_FENCE, index + 1)
    return -1


def _partial_suffix(text: str, markers: tuple[str, ...]) -> int:
    """Length of the longest end of ``text`` that could be the start of one of ``markers``."""
    longest = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text)), 0, -1):
            if marker.startswith(text[-size:]):
                longest = max(longest, size)
                break
    return longest

"""The mark a compaction leaves on its summary message, readable without pydantic-ai.

``nestor sessions show --json`` reads marks from the stored JSON; importing the model layer for
that would cost a listing command most of its time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

CompactionTrigger = Literal["threshold", "overflow", "manual"]

METADATA_KEY = "nestor"
"""nestor's key in a message's metadata."""

MARK_PATH = f"{METADATA_KEY}.compaction"
"""Where a summary message's metadata holds its mark."""


@dataclass(frozen=True, slots=True)
class CompactionMark:
    """What a summary message records about its compaction.

    Attributes:
        kept_messages: How many stored messages before the summary stay visible after it
            (earlier summaries not counted).
        summarized_messages: How many visible messages the summary replaced.
        trigger: Why it happened.
        tokens_before: The request size before compacting.

    """

    kept_messages: int
    summarized_messages: int
    trigger: CompactionTrigger
    tokens_before: int

    def to_metadata(self) -> dict[str, Any]:
        """The message metadata that marks a summary."""
        return {
            METADATA_KEY: {
                "compaction": {
                    "kept_messages": self.kept_messages,
                    "summarized_messages": self.summarized_messages,
                    "trigger": self.trigger,
                    "tokens_before": self.tokens_before,
                }
            }
        }


def mark_from_data(mark: object) -> CompactionMark | None:
    """Read a mark from its stored form (``metadata.nestor.compaction``); None when it is not one."""
    if not isinstance(mark, dict):
        return None
    try:
        return CompactionMark(
            kept_messages=int(mark["kept_messages"]),  # pyright: ignore[reportUnknownArgumentType]
            summarized_messages=int(mark.get("summarized_messages", 0)),  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
            trigger=mark.get("trigger", "threshold"),  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
            tokens_before=int(mark.get("tokens_before", 0)),  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
        )
    except (KeyError, TypeError, ValueError):
        return None

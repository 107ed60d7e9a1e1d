"""Permission modes: which questions a UI answers by itself, without asking a person.

A mode decides only the questions the permission rules leave to the user, never the rules or the
sandbox: ``ask`` answers none; ``accept_edits`` answers "allow once" to a question about changing
a file inside the project; ``yolo`` to every question, as ``--yolo`` does. A deny rule still
refuses, an ask rule still asks, in every mode, and so does a write into a git dir. ``nestor acp``
(an editor's modes) and the SDK (``permission_mode``) answer through this one function.
"""

from __future__ import annotations

from typing import Literal

from nestor.core.permission import PermissionRequest

ModeId = Literal["ask", "accept_edits", "yolo"]


def answers_itself(mode: ModeId, request: PermissionRequest, rule: str | None, *, must_ask: bool) -> bool:
    """True when ``mode`` answers "allow once" to this question without a person.

    Args:
        mode: The session's mode.
        request: What the call asks for.
        rule: The ask rule that raised the question, if one did: then the user wrote down that
            they want to be asked, and every mode asks.
        must_ask: nestor asks this whatever allows it (a write into a git dir, where a hook or a
            setting would run at the user's next git): every mode asks.

    """
    if rule is not None or must_ask:
        return False
    if mode == "yolo":
        return True
    return mode == "accept_edits" and request.action == "write" and not request.outside_project

"""What hooks decided: the JSON objects they return, read as Claude Code reads them, and combined.

Every hook, a shell command or an in-process callback, answers with one JSON object (a dict); a
command's exit code 2 is turned into the object that means the same (see ``command.py``). The
fields read:

- ``continue: false`` stops the agent, ``stopReason`` says why (shown to the user);
- ``systemMessage``: shown to the user; ``suppressOutput`` is accepted (nestor shows no hook output);
- ``decision: "block"`` with ``reason``: blocks the prompt (UserPromptSubmit), makes the agent go on
  (Stop, SubagentStop), tells the model ``reason`` after a tool ran (PostToolUse...) or skips a
  compaction (PreCompact);
- ``hookSpecificOutput``: ``additionalContext`` (added for the model), PreToolUse's
  ``permissionDecision`` (``allow``/``deny``/``ask``) with ``permissionDecisionReason`` and
  ``updatedInput``, PermissionRequest's ``decision: {behavior: allow|deny, message, updatedInput}``.

When several hooks answer, a deny wins over an ask, an ask over an allow; any block blocks; the
messages and contexts are all kept, in the hooks' order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

PermissionDecision = Literal["allow", "deny", "ask"]
_RANK: dict[str, int] = {"allow": 1, "ask": 2, "deny": 3}


@dataclass(slots=True)
class HookOutcome:
    """The combined decision of the hooks that ran on one event.

    Attributes:
        ran: How many hooks ran.
        stop: A hook said ``continue: false``: the agent stops.
        stop_reason: Why, for the user.
        blocked: A hook blocked (``decision: "block"``, exit code 2).
        reasons: The blocking hooks' reasons (for the model, or the user where no model reads it).
        system_messages: Lines for the user (``systemMessage``, hooks' errors).
        contexts: ``additionalContext`` for the model.
        permission: PreToolUse's strongest ``permissionDecision``; None when no hook gave one.
        permission_reasons: The reasons given with it.
        updated_input: The tool's input as a hook rewrote it (the last one given).
        behavior: PermissionRequest's ``decision.behavior``; None when no hook decided.
        decisions: Each hook's own object, in order (for ``nestor hooks test``).

    """

    ran: int = 0
    stop: bool = False
    stop_reason: str = ""
    blocked: bool = False
    reasons: list[str] = field(default_factory=list[str])
    system_messages: list[str] = field(default_factory=list[str])
    contexts: list[str] = field(default_factory=list[str])
    permission: PermissionDecision | None = None
    permission_reasons: list[str] = field(default_factory=list[str])
    updated_input: dict[str, Any] | None = None
    behavior: Literal["allow", "deny"] | None = None
    decisions: list[tuple[str, dict[str, Any]]] = field(default_factory=list[tuple[str, dict[str, Any]]])

    @property
    def reason(self) -> str:
        """The blocking reasons, one per line."""
        return "\n".join(reason for reason in self.reasons if reason)

    def add(self, label: str, answer: Mapping[str, Any]) -> None:
        """Fold one hook's answer in; fields of the wrong type are left out."""
        self.ran += 1
        self.decisions.append((label, dict(answer)))
        if answer.get("continue") is False:
            self.stop = True
            self.stop_reason = self.stop_reason or _text(answer.get("stopReason"))
        if message := _text(answer.get("systemMessage")):
            self.system_messages.append(message)
        if answer.get("decision") == "block":
            self.blocked = True
            self.reasons.append(_text(answer.get("reason")))
        elif answer.get("decision") == "approve":  # PreToolUse's older spelling of an allow
            self._permit("allow", answer.get("reason"))
        specific: Any = answer.get("hookSpecificOutput")
        if isinstance(specific, Mapping):
            self._add_specific(specific)  # pyright: ignore[reportUnknownArgumentType]

    def _add_specific(self, specific: Mapping[str, Any]) -> None:
        if context := _text(specific.get("additionalContext")):
            self.contexts.append(context)
        decision = specific.get("permissionDecision")
        if decision in _RANK:
            self._permit(decision, specific.get("permissionDecisionReason"))
        updated: Any = specific.get("updatedInput")
        if isinstance(updated, dict):
            self.updated_input = updated  # pyright: ignore[reportUnknownMemberType]
        request: Any = specific.get("decision")
        if isinstance(request, Mapping):
            behavior = request.get("behavior")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if behavior == "deny" or (behavior == "allow" and self.behavior is None):
                self.behavior = behavior
                if message := _text(request.get("message")):  # pyright: ignore[reportUnknownMemberType]
                    self.reasons.append(message)
                changed: Any = request.get("updatedInput")  # pyright: ignore[reportUnknownMemberType]
                if behavior == "allow" and isinstance(changed, dict):
                    self.updated_input = changed  # pyright: ignore[reportUnknownMemberType]

    def _permit(self, decision: PermissionDecision, reason: object) -> None:
        """Keep the strongest permission decision (deny over ask over allow) and every reason."""
        if self.permission is None or _RANK[decision] > _RANK[self.permission]:
            self.permission = decision
        if text := _text(reason):
            self.permission_reasons.append(text)

    def add_error(self, label: str, message: str) -> None:
        """A hook that failed (an exit code but 0 and 2, a time-out, an exception): shown, not blocking."""
        self.ran += 1
        self.decisions.append((label, {"error": message}))
        self.system_messages.append(f"hook {label}: {message}")


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""

"""One dispatcher for every hook, shell command or in-process callback, in the Claude Agent SDK's shape.

A hook is a callback ``async (input, tool_use_id, context) -> dict`` grouped under a
:class:`HookMatcher` per event, as the Claude Agent SDK's ``hooks`` option has them; a shell hook
is a :class:`~nestor.runtime.features.hook_events.command.CommandHook`, a callback that runs its
command. :meth:`HookDispatcher.fire` runs the callbacks whose matcher matches, all at once,
identical commands once, each within its time-out (60 s unless its matcher says otherwise), and
folds their answers into one :class:`HookOutcome`. A hook that fails or times out is an error
shown to the user, never a block.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from nestor.config.hooks import DEFAULT_HOOK_TIMEOUT_S, HOOK_EVENTS, ConfiguredHook
from nestor.runtime.features.hook_events.command import CommandHook
from nestor.runtime.features.hook_events.matching import matches
from nestor.runtime.features.hook_events.outcome import HookOutcome


@dataclass(frozen=True, slots=True)
class HookContext:
    """What a callback gets besides its input (the Claude Agent SDK's ``HookContext``).

    Attributes:
        signal: Reserved, as in the SDK (always None): a time-out or a cancel cancels the callback.

    """

    signal: None = None


HookCallback: TypeAlias = Callable[[dict[str, Any], str | None, HookContext], Awaitable[dict[str, Any]]]
"""``async (input, tool_use_id, context) -> dict``: an event's JSON in, the hook's JSON answer out."""


@dataclass(slots=True)
class HookMatcher:
    """Callbacks that run on an event when ``matcher`` matches (the Claude Agent SDK's ``HookMatcher``).

    Attributes:
        matcher: A tool name, a ``|`` list or a regular expression (for tool events; a source,
            trigger, agent type or notification type for the others); None or ``*``: always.
        hooks: The callbacks.
        timeout: Seconds each callback may take (60 when None).

    """

    matcher: str | None = None
    hooks: list[HookCallback] = field(default_factory=list[HookCallback])
    timeout: float | None = None


HookMatchers: TypeAlias = Mapping[str, Sequence[HookMatcher]]
"""Matchers by event name (``{"PreToolUse": [HookMatcher("Bash", [check])]}``)."""


def check_events(hooks: HookMatchers) -> None:
    """Refuse an event name nestor does not fire.

    Raises:
        ValueError: An unknown event, naming the known ones.

    """
    for event in hooks:
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {event!r}; known: {', '.join(HOOK_EVENTS)}")


class HookDispatcher:
    """Every hook of a process (or of one agent), by event; fires them and combines their answers.

    Args:
        hooks: Matchers by event name.

    """

    def __init__(self, hooks: HookMatchers | None = None) -> None:
        check_events(hooks or {})
        self._hooks: dict[str, list[HookMatcher]] = {
            event: list(groups) for event, groups in (hooks or {}).items()
        }

    @classmethod
    def of(
        cls, configured: Iterable[ConfiguredHook], project_root: Path, callbacks: HookMatchers | None = None
    ) -> HookDispatcher:
        """Shell hooks (each its own matcher, with its time-out) followed by in-process ``callbacks``."""
        dispatcher = cls()
        dispatcher.add(configured, project_root)
        return dispatcher.with_hooks(cls(callbacks))

    def add(self, configured: Iterable[ConfiguredHook], project_root: Path) -> None:
        """Shell hooks from now on, for every agent holding this dispatcher (approved while it runs)."""
        for hook in configured:
            group = HookMatcher(hook.matcher, [CommandHook(hook, project_root)], hook.timeout_s)
            self._hooks.setdefault(hook.event, []).append(group)

    def with_hooks(self, more: HookDispatcher) -> HookDispatcher:
        """These hooks and ``more``'s (an agent file's own, for that agent)."""
        combined = HookDispatcher()
        for source in (self, more):
            for event, groups in source._hooks.items():
                combined._hooks.setdefault(event, []).extend(groups)
        return combined

    def has(self, event: str) -> bool:
        """Whether any hook listens to ``event``."""
        return bool(self._hooks.get(event))

    def __bool__(self) -> bool:
        return any(self._hooks.values())

    async def fire(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        match: Sequence[str] = (),
        tool_use_id: str | None = None,
    ) -> HookOutcome:
        """Run the hooks of ``event`` whose matcher matches one of ``match`` (all, when empty).

        Args:
            event: The event's name.
            payload: The event's JSON (``hook_event_name`` included).
            match: The names matchers are read against (a tool's names, a source, a trigger).
            tool_use_id: The tool call's id, on tool events.

        """
        outcome = HookOutcome()
        chosen: list[tuple[HookCallback, float]] = []
        seen: set[object] = set()
        for group in self._hooks.get(event, ()):
            if match and not matches(group.matcher, match):
                continue
            for callback in group.hooks:
                key = getattr(callback, "dedupe_key", callback)
                if key in seen:
                    continue
                seen.add(key)
                chosen.append((callback, group.timeout or DEFAULT_HOOK_TIMEOUT_S))
        if not chosen:
            return outcome
        answers = await asyncio.gather(
            *(_run(callback, timeout, payload, tool_use_id) for callback, timeout in chosen)
        )
        for (callback, _timeout), (answer, error) in zip(chosen, answers, strict=True):
            label = _label(callback)
            if error is not None:
                outcome.add_error(label, error)
            elif answer is not None:
                outcome.add(label, answer)
        return outcome


async def _run(
    callback: HookCallback, timeout: float, payload: dict[str, Any], tool_use_id: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """One callback's answer, or the error it is reported by."""
    try:
        answer: Any = await asyncio.wait_for(callback(dict(payload), tool_use_id, HookContext()), timeout)
    except TimeoutError:
        return None, f"timed out after {timeout:g} s and was stopped"
    except Exception as exc:  # a hook's failure is reported, never the run's end
        return None, str(exc) or type(exc).__name__
    if answer is None:
        return {}, None
    if not isinstance(answer, dict):
        return None, f"answered {type(answer).__name__}, not a JSON object"
    return answer, None  # pyright: ignore[reportUnknownVariableType]


def _label(callback: HookCallback) -> str:
    label = getattr(callback, "label", None)
    if isinstance(label, str):
        return label
    return getattr(callback, "__qualname__", None) or type(callback).__name__

"""Shell hooks in Claude Code's format: the tables, the files they come from, each hook with its source.

The same shape is read from ``[hooks]`` in ``config.toml`` (and a trusted project's ``nestor.toml``)
and from the ``hooks`` object of Claude Code's ``settings.json`` files::

    [[hooks.PreToolUse]]
    matcher = "Bash"
    hooks = [{ type = "command", command = "~/bin/check.sh", timeout = 30 }]

A Claude Code settings file is the user's Claude Code config first: an event or a hook type nestor
does not run (``type = "prompt"``, an event only Claude Code has) is left out there, while in
nestor's own files it is an error. Every hook is kept with where it came from
(:class:`ConfiguredHook`): a project's hooks run only once the user approved each one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

from nestor.config.files import read_json_file
from nestor.core.errors import ConfigError
from nestor.core.shown import one_line

HookEvent: TypeAlias = Literal[
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
]
"""The events hooks run on, spelt as Claude Code spells them."""
HOOK_EVENTS: tuple[str, ...] = get_args(HookEvent)
DEFAULT_HOOK_TIMEOUT_S = 60.0
CLAUDE_SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json")
"""A project's Claude Code settings files, in order of precedence (lowest first)."""


class CommandHookConfig(BaseModel):
    """One shell hook: ``command`` run with the event's JSON on stdin."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["command"] = "command"
    command: StrictStr = Field(min_length=1)
    timeout: StrictInt | StrictFloat | None = Field(default=None, gt=0)


class HookMatcherConfig(BaseModel):
    """The hooks of one event that run when ``matcher`` matches (absent, empty or ``*``: always)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    matcher: StrictStr | None = None
    hooks: list[CommandHookConfig]


HooksTable: TypeAlias = dict[HookEvent, list[HookMatcherConfig]]


@dataclass(frozen=True, slots=True)
class ConfiguredHook:
    """One shell hook as a config file defines it, with its source.

    Attributes:
        event: The event it runs on.
        matcher: Its matcher as written (None: every tool or source).
        command: The shell command.
        timeout_s: Seconds before it is killed.
        source: The file it comes from.
        project: It comes with the project (or a project's agent file): it runs only once approved.
        agent: The agent file whose own hook it is, for that agent alone; None for every agent.

    """

    event: str
    matcher: str | None
    command: str
    timeout_s: float
    source: str
    project: bool
    agent: str | None = None

    @property
    def name(self) -> str:
        """What an approval of it is keyed by besides its hash: the same place in the same file."""
        owner = f"agent {self.agent} " if self.agent else ""
        return one_line(f"{owner}{self.event}[{self.matcher or '*'}] in {self.source}")

    @property
    def digest(self) -> str:
        """The SHA-256 of what runs (event, matcher, command, timeout): a change needs a new approval."""
        text = json.dumps([self.event, self.matcher, self.command, self.timeout_s], sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def configured_hooks(
    table: HooksTable, source: str, *, project: bool, agent: str | None = None
) -> list[ConfiguredHook]:
    """Every hook of a checked ``[hooks]`` table, with its source."""
    return [
        ConfiguredHook(
            event=event,
            matcher=group.matcher,
            command=hook.command,
            timeout_s=float(hook.timeout or DEFAULT_HOOK_TIMEOUT_S),
            source=source,
            project=project,
            agent=agent,
        )
        for event, groups in table.items()
        for group in groups
        for hook in group.hooks
    ]


def check_hooks_table(data: object, source: str, key: str = "hooks") -> HooksTable:
    """``data`` checked as a ``[hooks]`` table; a problem is one line naming ``source`` and the key.

    Raises:
        ConfigError: An unknown event, a missing command, a value of the wrong type.

    """
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(HooksTable).validate_python(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        dotted = ".".join([key, *(str(part) for part in error["loc"])])
        if error["type"] == "literal_error" and len(error["loc"]) >= 1 and error["loc"][-1] == "[key]":
            dotted = f"{key}.{error['input']}"
            cause = f"unknown hook event; known: {', '.join(HOOK_EVENTS)}"
        elif error["type"] == "extra_forbidden":
            cause = "unknown key"
        elif error["type"] == "missing":
            cause = "this key is required"
        else:
            cause = error["msg"][:1].lower() + error["msg"][1:]
        raise ConfigError(f"{source}: {dotted}: {cause}", hint=f"fix '{dotted}' in {source}") from None


def read_claude_settings_hooks(path: Path, *, inside: Path | None = None) -> HooksTable | None:
    """The ``hooks`` of a Claude Code ``settings.json``; None when the file or the key is absent.

    Events and hook types nestor does not run are left out (the file is Claude Code's config too).

    Raises:
        ConfigError: The file cannot be read, is not JSON, or a hook nestor runs is malformed.

    """
    data: Any = read_json_file(path, inside=inside, what="a Claude Code settings file")
    hooks: Any = data.get("hooks") if isinstance(data, dict) else None
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise ConfigError(f"{path}: hooks: expected an object of events", hint=f"fix 'hooks' in {path}")
    return check_hooks_table(_runnable(hooks), str(path))  # pyright: ignore[reportUnknownArgumentType]


def _runnable(hooks: dict[str, Any]) -> dict[str, Any]:
    """Claude Code's events nestor knows, with their command hooks alone."""
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if event not in HOOK_EVENTS or not isinstance(groups, list):
            continue
        kept_groups: list[Any] = []
        for group in groups:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):  # pyright: ignore[reportUnknownMemberType]
                entries = [
                    entry
                    for entry in group["hooks"]  # pyright: ignore[reportUnknownVariableType]
                    if not (isinstance(entry, dict) and entry.get("type", "command") != "command")  # pyright: ignore[reportUnknownMemberType]
                ]
                group = {**group, "hooks": entries}  # pyright: ignore[reportUnknownVariableType]
            kept_groups.append(group)
        kept[event] = kept_groups
    return kept


def claude_user_settings(env: Mapping[str, str]) -> Path:
    """The user's Claude Code settings: ``$CLAUDE_CONFIG_DIR/settings.json``, else in ``~/.claude``."""
    if config_dir := env.get("CLAUDE_CONFIG_DIR", "").strip():
        return Path(config_dir) / "settings.json"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".claude" / "settings.json"

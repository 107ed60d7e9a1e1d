"""An agent file's own hooks: Claude Code's ``hooks`` front matter, for that agent alone.

The value has the shape of a settings file's ``hooks`` (``{EVENT: [{matcher, hooks: [{type:
command, command, timeout}]}]}``). Each hook is kept with the file it comes from; a project's
agent file's hooks are a project's hooks: they run only in a trusted folder, once approved. A
hook nestor cannot read is a warning in another assistant's file (the agent loads without its
hooks) and an error in nestor's own.
"""

from __future__ import annotations

from typing import Any

from nestor.agents.fields import Fields
from nestor.config.hooks import ConfiguredHook, check_hooks_table, configured_hooks
from nestor.core.errors import ConfigError


def hook_fields(fields: Fields, key: str = "hooks") -> dict[str, Any]:
    """A spec's ``hooks``, read from ``key``."""
    value: Any = fields.get(key)
    if value is None:
        return {}
    context = fields.context
    try:
        table = check_hooks_table(value, str(context.path), key)
    except ConfigError as exc:
        report = fields.error if context.ecosystem == "nestor" else fields.warn
        cause = exc.message.removeprefix(f"{context.path}: ")
        report(key, f"{cause}; the agent's hooks are left out")
        return {}
    name: Any = fields.get("name")
    hooks: list[ConfiguredHook] = configured_hooks(
        table,
        str(context.path),
        project=context.source == "project",
        agent=name if isinstance(name, str) else context.default_name,
    )
    return {"hooks": tuple(hooks)}

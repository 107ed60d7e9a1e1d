"""Which model a sub-agent runs on: a ``model`` value of a task call or an agent file, resolved."""

from __future__ import annotations

from nestor.config.sections import AgentsConfig
from nestor.core.errors import ToolError

CLAUDE_ALIASES = {"haiku": "small", "sonnet": "large", "opus": "large"}
"""Claude Code's model aliases, as roles: agent files written for Claude Code keep working."""
_ROLES = ("large", "small")
_DEFAULT_TIERS = {"fast": "small", "standard": "large", "powerful": "large"}


def resolve_model_choice(choice: str | None, config: AgentsConfig) -> str | None:
    """A role or ``provider:model`` for a ``model`` value; None means inherit the parent's.

    Raises:
        ToolError: ``choice`` is none of the accepted forms.

    """
    if choice is None or choice.strip() in ("", "inherit"):
        return None
    value = choice.strip()
    if value in _ROLES or ":" in value:
        return value
    if value in CLAUDE_ALIASES:
        return CLAUDE_ALIASES[value]
    if value in _DEFAULT_TIERS:
        mapped = config.tiers.get(value, _DEFAULT_TIERS[value])  # pyright: ignore[reportArgumentType, reportCallIssue]
        return resolve_model_choice(mapped, config) or "large"
    raise ToolError(
        f"unknown model {choice!r}: use a role (large, small), a tier (fast, standard, powerful), "
        "haiku/sonnet/opus/inherit, or provider:model"
    )

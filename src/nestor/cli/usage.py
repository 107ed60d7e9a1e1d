"""Command-line usage mistakes as one ``error:`` line and one ``hint:`` line, with exit code 2.

Typer (which vendors its own copy of Click) raises its exceptions for an unknown command or
option, a missing argument or a value that does not parse; :func:`usage_error` turns each into a
:class:`~nestor.core.errors.UsageError` naming the command or flag and, where there are few, the
valid choices.
"""

from __future__ import annotations

from typing import Any

from nestor.core.errors import UsageError

_PYDANTIC_PREFIX = "Value error, "


def usage_error(error: Exception) -> UsageError:
    """The :class:`UsageError` to report for ``error``, an exception Typer raised while parsing."""
    ctx: Any = getattr(error, "ctx", None)
    command_path = str(getattr(ctx, "command_path", "") or "nestor")
    hint = f"{command_path} --help lists what it accepts"
    message = _one_line(_format(error))
    if message.startswith("no such command") and ctx is not None:
        names = _subcommands(ctx)
        if names:
            message = f"{message} in `{command_path}`; the commands are: {', '.join(names)}"
            hint = f"{command_path} COMMAND --help describes one"
    elif message.startswith("missing") and ctx is not None:
        message = f"{message} of `{command_path}`"
    elif message.startswith("no such option") and (close := _close_options(error)):
        message = message.partition(" (")[0] + f"; did you mean {' or '.join(close)}?"
    value = _bad_value(error)
    if message.startswith("invalid value for "):
        flag, _, reason = message.removeprefix("invalid value for ").partition(": ")
        reason = reason[:1].lower() + reason[1:]
        shown = "" if value is None or repr(value) in reason else f" {value!r}"
        message = f"invalid value{shown} for {flag}: {reason}"
    return UsageError(message, hint=hint)


def _format(error: Exception) -> str:
    format_message = getattr(error, "format_message", None)
    return str(format_message()) if callable(format_message) else str(error)


def _one_line(text: str) -> str:
    text = " ".join(text.replace(_PYDANTIC_PREFIX, "").split())
    text = text.removesuffix(".")
    return text[:1].lower() + text[1:]


def _close_options(error: Exception) -> list[str]:
    possibilities: Any = getattr(error, "possibilities", None) or ()
    return [str(option) for option in possibilities]


def _subcommands(ctx: Any) -> list[str]:
    list_commands: Any = getattr(ctx.command, "list_commands", None)
    names: Any = list_commands(ctx) if callable(list_commands) else ()
    return [str(name) for name in names]


def _bad_value(error: Exception) -> Any:
    """The value that failed to parse, when Typer kept it (on the pydantic error it wraps)."""
    errors = getattr(error.__cause__, "errors", None)
    if not callable(errors):
        return None
    try:
        found: Any = errors()
        return found[0]["input"] if found else None
    except (LookupError, TypeError):
        return None

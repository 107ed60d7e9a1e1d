"""Readers of agent files, one per ecosystem, each producing an :class:`AgentSpec` and problems.

nestor's own format is strict (an unknown key is an error, since it is most likely a typo nestor
would otherwise ignore); other ecosystems' formats are read leniently (a key nestor does not use is
a warning), because those files are written for another tool and keep working there.

This module holds nestor's, Claude Code's and OpenCode's readers and :func:`read_agent_file`, which
dispatches on the ecosystem; the other formats are in :mod:`nestor.agents.readers_foreign`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from nestor.agents.fields import (
    AgentFileProblem,
    Fields,
    ReadContext,
    ReadResult,
    canonical_rules,
    plain_model,
)
from nestor.agents.frontmatter import FrontMatter, parse_front_matter
from nestor.agents.hook_fields import hook_fields
from nestor.agents.mcp_fields import mcp_fields
from nestor.agents.readers_foreign import (
    CODEALLY_KEYS,
    DEEPAGENTS_KEYS,
    EMDASH_KEYS,
    EMDASH_UNSUPPORTED,
    GEMINI_KEYS,
    READ_ONLY_TOOLS,
    parse_json_document,
    read_codeally,
    read_deepagents,
    read_emdash,
    read_gemini,
    read_minicc,
)
from nestor.agents.spec import PermissionRuleSpec
from nestor.agents.tool_names import expand_tool_wildcard, is_wildcard
from nestor.core.errors import AgentFileError
from nestor.core.files import read_bounded_text

__all__ = [
    "ECOSYSTEMS",
    "NESTOR_KEYS",
    "AgentFileProblem",
    "ReadContext",
    "ReadResult",
    "read_agent_file",
    "read_agent_text",
]

MAX_AGENT_FILE_BYTES = 256_000
"""An agent file (or a prompt file it names) larger than this is not read."""
THOROUGHNESS = ("quick", "medium", "thorough")
MODES = ("subagent", "primary", "all")

NESTOR_KEYS = (
    "name",
    "description",
    "tools",
    "disallowed_tools",
    "disallowedTools",
    "model",
    "temperature",
    "max_turns",
    "timeout",
    "max_context_tokens",
    "thoroughness",
    "rules",
    "skills",
    "color",
    "mode",
    "persist",
    "background",
    "inherit_context",
    "project_instructions",
    "permission",
    "mcp_servers",
    "hooks",
)
"""Every key of nestor's agent format."""

_CLAUDE_KEYS = (
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "maxTurns",
    "skills",
    "background",
    "color",
    "mcpServers",
    "hooks",
)
_CLAUDE_UNSUPPORTED = ("permissionMode", "memory", "isolation", "effort")
_OPENCODE_KEYS = (
    "description",
    "mode",
    "model",
    "prompt",
    "temperature",
    "color",
    "steps",
    "maxSteps",
    "permission",
    "tools",
    "disable",
)
_OPENCODE_OTHER_KEYS = ("top_p", "hidden")
# OpenCode's "edit" permission governs every file change (edit, write, patch).
_OPENCODE_PERMISSION_GROUPS = {"edit": ("edit", "write")}
_FILE_REFERENCE = re.compile(r"^\{file:(.+)\}$")

Reader = Callable[[Fields], ReadResult]


def read_nestor(fields: Fields) -> ReadResult:
    """Read nestor's own format (the superset of every key a spec has)."""
    fields.check_keys(NESTOR_KEYS, unknown="error")
    disallowed = (fields.tools("disallowed_tools", wildcards=True) or ()) + (
        fields.tools("disallowedTools", wildcards=True) or ()
    )
    return fields.build(
        name=fields.name(),
        description=fields.description(required=True),
        prompt=fields.document.body,
        tools=fields.tools("tools", wildcards=True),
        disallowed_tools=tuple(dict.fromkeys(disallowed)),
        model=plain_model(fields.string("model")),
        temperature=fields.number("temperature", maximum=2.0),
        max_turns=fields.integer("max_turns"),
        max_time_s=fields.positive_number("timeout"),
        max_context_tokens=fields.integer("max_context_tokens"),
        thoroughness=fields.choice("thoroughness", THOROUGHNESS),
        rule_files=fields.files("rules", "rules"),
        skill_files=fields.files("skills", "skills"),
        color=fields.string("color"),
        mode=fields.choice("mode", MODES) or "subagent",
        persist=bool(fields.boolean("persist")),
        background=bool(fields.boolean("background")),
        inherit_context=bool(fields.boolean("inherit_context")),
        project_instructions=fields.boolean("project_instructions") is not False,
        permission=_nestor_permission(fields),
        **mcp_fields(fields, "mcp_servers"),
        **hook_fields(fields),
    )


def _nestor_permission(fields: Fields) -> tuple[PermissionRuleSpec, ...]:
    value: Any = fields.get("permission")
    if value is None:
        return ()
    if not isinstance(value, dict):
        fields.error("permission", "must be a mapping of allow/ask/deny to lists of rules")
        return ()
    if not any(str(key) in ("allow", "ask", "deny") for key in value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        # OpenCode's shape, tool -> action (or pattern -> action), reads the same here.
        return _opencode_permission(fields)
    rules: list[PermissionRuleSpec] = []
    for action, entries in value.items():  # pyright: ignore[reportUnknownVariableType]
        key = str(action)  # pyright: ignore[reportUnknownArgumentType]
        items: Any = [entries] if isinstance(entries, str) else entries
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):  # pyright: ignore[reportUnknownVariableType]
            fields.error("permission", f"{key} must be a list of rules such as 'bash(git *)'", key)
            continue
        for text in items:  # pyright: ignore[reportUnknownVariableType]
            rule = fields.rule("permission", key, str(text), key)  # pyright: ignore[reportUnknownArgumentType]
            if rule is not None:
                rules.append(rule)
    return canonical_rules(rules)


def read_claude(fields: Fields) -> ReadResult:
    """Read a Claude Code sub-agent (``.claude/agents/*.md``)."""
    fields.check_keys(_CLAUDE_KEYS, unknown="warning", unsupported=_CLAUDE_UNSUPPORTED)
    return fields.build(
        name=fields.name(required=True),
        description=fields.description(required=True),
        prompt=fields.document.body,
        tools=fields.tools("tools"),
        disallowed_tools=fields.tools("disallowedTools") or (),
        model=_claude_model(fields.string("model")),
        max_turns=fields.integer("maxTurns"),
        skill_files=fields.files("skills", "skills"),
        background=bool(fields.boolean("background")),
        color=fields.string("color"),
        **mcp_fields(fields, "mcpServers"),
        **hook_fields(fields),
    )


def _claude_model(value: str | None) -> str | None:
    """Claude Code's full model ids (``claude-sonnet-4-5``) are Anthropic's: ``anthropic:<id>``."""
    value = plain_model(value)
    if value is not None and ":" not in value and value.startswith("claude-"):
        return f"anthropic:{value}"
    return value


def read_opencode(fields: Fields) -> ReadResult:
    """Read an OpenCode agent (``.opencode/agent(s)/**/*.md``).

    Its name is the file's stem, without the subdirectories (agent names cannot contain ``/``); two
    files with the same stem are reported as one shadowing the other.
    """
    fields.check_keys(_OPENCODE_KEYS, unknown="warning", unsupported=("top_p",), ignored=("hidden",))
    if fields.boolean("disable"):
        return fields.result(None)
    steps = fields.integer("steps")
    if steps is None:
        steps = fields.integer("maxSteps")
    return fields.build(
        name=fields.name(key=None),
        description=fields.description(required=True),
        prompt=_opencode_prompt(fields),
        mode=fields.choice("mode", MODES) or "all",
        model=_provider_model(fields.string("model")),
        temperature=fields.number("temperature", maximum=2.0),
        color=fields.string("color"),
        max_turns=steps,
        disallowed_tools=_opencode_disabled_tools(fields),
        permission=_opencode_permission(fields),
    )


def _provider_model(value: str | None) -> str | None:
    """OpenCode's ``provider/model`` as nestor's ``provider:model`` (only the first ``/``)."""
    value = plain_model(value)
    if value is None or ":" in value or "/" not in value:
        return value
    provider, model = value.split("/", 1)
    return f"{provider}:{model}"


def _opencode_prompt(fields: Fields) -> str:
    prompt = fields.string("prompt")
    if prompt is None:
        return fields.document.body
    reference = _FILE_REFERENCE.match(prompt)
    if reference is None:
        return prompt
    path = (fields.context.path.parent / reference.group(1).strip()).expanduser()
    fields.depends_on.append(path)
    try:
        read = read_bounded_text(path, limit_bytes=MAX_AGENT_FILE_BYTES, inside=fields.context.inside)
    except OSError as exc:
        fields.error("prompt", f"the prompt file {path} cannot be read: {exc.strerror or exc}")
        return ""
    if read.cut:
        fields.error("prompt", f"the prompt file {path} is larger than {MAX_AGENT_FILE_BYTES:,} bytes")
        return ""
    return read.text.strip()


def _opencode_disabled_tools(fields: Fields) -> tuple[str, ...]:
    value: Any = fields.get("tools")
    if value is None:
        return ()
    if not isinstance(value, dict):
        fields.error("tools", "must be a mapping of tool names to true or false")
        return ()
    disabled: list[str] = []
    for name, enabled in value.items():  # pyright: ignore[reportUnknownVariableType]
        key = str(name)  # pyright: ignore[reportUnknownArgumentType]
        if not isinstance(enabled, bool):
            fields.error("tools", f"{key} must be true or false, not {enabled!r}", key)
            continue
        tools = fields.tool("tools", key, key, wildcards=True)
        if not enabled:
            disabled.extend(tools)
    return tuple(dict.fromkeys(disabled))


def _opencode_permission(fields: Fields) -> tuple[PermissionRuleSpec, ...]:
    value: Any = fields.get("permission")
    if value is None:
        return ()
    if not isinstance(value, dict):
        fields.error("permission", "must be a mapping of tool names to allow/ask/deny (or to patterns)")
        return ()
    rules: list[PermissionRuleSpec] = []
    for tool, setting in value.items():  # pyright: ignore[reportUnknownVariableType]
        key = str(tool)  # pyright: ignore[reportUnknownArgumentType]
        if isinstance(setting, str):
            pairs: list[tuple[str, Any]] = [("*", setting)]
        elif isinstance(setting, dict):
            pairs = [(str(pattern), action) for pattern, action in setting.items()]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        else:
            fields.error(
                "permission", f"{key} must be allow, ask, deny or a mapping of patterns to those", key
            )
            continue
        targets = _permission_targets(key)
        for pattern, action in pairs:
            if not isinstance(action, str):
                fields.error(
                    "permission", f"{key}: the action must be allow, ask or deny, not {action!r}", key
                )
                continue
            for target in targets:
                text = target if pattern == "*" else f"{target}({pattern})"
                rule = fields.rule("permission", action, text, key)
                if rule is not None:
                    rules.append(rule)
    return canonical_rules(rules)


def _permission_targets(tool: str) -> tuple[str, ...]:
    if is_wildcard(tool):
        return expand_tool_wildcard(tool) or (tool,)
    return _OPENCODE_PERMISSION_GROUPS.get(tool.lower(), (tool,))


Parser = Callable[[str, Path], FrontMatter]


def _markdown(*keys: Iterable[str]) -> Parser:
    """The Markdown parser for a format whose front matter has ``keys``."""
    known = frozenset(key for group in keys for key in group)
    return lambda text, path: parse_front_matter(text, path, keys=known)


READERS: dict[str, tuple[Parser, Reader]] = {
    "nestor": (_markdown(NESTOR_KEYS), read_nestor),
    "claude": (_markdown(_CLAUDE_KEYS, _CLAUDE_UNSUPPORTED), read_claude),
    "opencode": (_markdown(_OPENCODE_KEYS, _OPENCODE_OTHER_KEYS), read_opencode),
    "gemini": (_markdown(GEMINI_KEYS), read_gemini),
    "emdash": (_markdown(EMDASH_KEYS, EMDASH_UNSUPPORTED), read_emdash),
    "codeally": (_markdown(CODEALLY_KEYS), read_codeally),
    "mini-cc": (parse_json_document, read_minicc),
    "deepagents": (_markdown(DEEPAGENTS_KEYS), read_deepagents),
}
"""Each ecosystem's parser (text to front matter) and reader (front matter to spec)."""

ECOSYSTEMS: tuple[str, ...] = tuple(READERS)
"""The formats nestor reads, in precedence order within one level (nestor's own first)."""


def read_agent_text(context: ReadContext, text: str) -> ReadResult:
    """Read an agent definition from ``text`` in the format ``context.ecosystem`` names.

    Raises:
        ValueError: ``context.ecosystem`` is not one of :data:`ECOSYSTEMS`.

    """
    if context.ecosystem not in READERS:
        raise ValueError(f"unknown agent file format {context.ecosystem!r}; known: {', '.join(ECOSYSTEMS)}")
    parse, read = READERS[context.ecosystem]
    try:
        document = parse(text, context.path)
    except AgentFileError as exc:
        return ReadResult(None, (_problem_from_error(exc, context.path),))
    if not document.present and context.ecosystem != "nestor":
        # Other tools' agent directories often hold a README or notes; those are not agents.
        message = "no YAML front matter, so the file is not read as an agent"
        return ReadResult(None, (AgentFileProblem(context.path, 1, "", message, "warning"),))
    fields = Fields(context, document)
    for repair in document.repairs:
        fields.problems.append(
            AgentFileProblem(context.path, repair.line, repair.key, repair.describe(), "warning")
        )
    if document.ignored is not None:
        return _front_matter_ignored(fields)
    return read(fields)


def _front_matter_ignored(fields: Fields) -> ReadResult:
    """The agent of a file whose front matter no repair could read: its body, under its file's name.

    Claude Code keeps such a file with empty metadata. Its tool list was lost with the rest, and the
    file may have limited the agent to a few tools, so it gets only the read-only ones.
    """
    return fields.build(
        name=fields.name(key=None),
        description="",
        prompt=fields.document.body,
        tools=READ_ONLY_TOOLS,
    )


def _problem_from_error(error: AgentFileError, path: Path) -> AgentFileProblem:
    """Turn an :class:`AgentFileError` into an error problem (without repeating the location)."""
    message = error.message.removeprefix(f"{path}:{error.line}: ")
    if error.key:
        message = message.removeprefix(f"{error.key}: ")
    return AgentFileProblem(path, error.line, error.key, message, "error")


def read_agent_file(context: ReadContext) -> ReadResult:
    """Read the agent file at ``context.path``; an unreadable file is an error problem, not an exception."""
    try:
        read = read_bounded_text(
            context.path, limit_bytes=MAX_AGENT_FILE_BYTES, inside=context.inside, errors="strict"
        )
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return ReadResult(None, (AgentFileProblem(context.path, 1, "", f"cannot be read: {reason}"),))
    if read.cut:
        message = f"larger than {MAX_AGENT_FILE_BYTES:,} bytes: not read; keep agent files short"
        return ReadResult(None, (AgentFileProblem(context.path, 1, "", message),))
    return read_agent_text(context, read.text)

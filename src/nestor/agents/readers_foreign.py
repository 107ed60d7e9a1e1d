"""Readers of Gemini CLI, emdash, CodeAlly, mini-cc and deepagents agent files.

Each reads its format as that tool writes it; keys nestor does not use are warnings, so a file
shared with the other tool keeps loading here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nestor.agents.fields import Fields, ReadResult, plain_model
from nestor.agents.frontmatter import FrontMatter, check_size, too_deep_error
from nestor.agents.mcp_fields import mcp_fields
from nestor.core.errors import AgentFileError

GEMINI_KEYS = (
    *("name", "description", "kind", "tools", "model", "temperature", "max_turns", "timeout_mins"),
    "mcpServers",
)
EMDASH_KEYS = ("description", "model", "tools", "rules", "skills", "mcp_servers")
EMDASH_UNSUPPORTED = ("verifiers",)
READ_ONLY_TOOLS = ("view", "ls", "glob", "grep")
"""The tools of an agent that only reads: emdash's default, and an agent whose front matter was ignored."""
_CODEALLY_IGNORED = ("created_at", "updated_at")
CODEALLY_KEYS = ("name", "description", "tools", "temperature", "model", *_CODEALLY_IGNORED)
_MINICC_KEYS = ("name", "description", "tools", "prompt")
DEEPAGENTS_KEYS = ("name", "description", "model")

_EXAMPLES_HEADING = re.compile(r"^#\s+Examples\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def read_gemini(fields: Fields) -> ReadResult:
    """Read a Gemini CLI sub-agent (``.gemini/agents/*.md``); ``timeout_mins`` becomes seconds."""
    fields.check_keys(GEMINI_KEYS, unknown="warning")
    if fields.string("kind") == "remote":
        fields.warn("kind", "remote (A2A) agents are not supported by nestor; the agent is skipped")
        return fields.result(None)
    minutes = fields.positive_number("timeout_mins")
    return fields.build(
        name=fields.name(),
        description=fields.description(required=True),
        prompt=fields.document.body,
        tools=fields.tools("tools", wildcards=True),
        model=_gemini_model(fields.string("model")),
        temperature=fields.number("temperature", maximum=2.0),
        max_turns=fields.integer("max_turns"),
        max_time_s=None if minutes is None else minutes * 60.0,
        **mcp_fields(fields, "mcpServers"),
    )


def _gemini_model(value: str | None) -> str | None:
    """A bare Gemini model id means Google's API (``google:<id>``); anything else stays as written."""
    value = plain_model(value)
    if value is not None and ":" not in value and value.startswith("gemini-"):
        return f"google:{value}"
    return value


def read_emdash(fields: Fields) -> ReadResult:
    """Read an emdash agent (``.emdash/agents/*.md``): named after its file, prompt before ``# Examples``."""
    fields.check_keys(EMDASH_KEYS, unknown="warning", unsupported=EMDASH_UNSUPPORTED)
    tools = fields.tools("tools")
    return fields.build(
        name=fields.name(key=None),
        description=fields.description(required=False),
        prompt=prompt_before_examples(fields.document.body),
        tools=READ_ONLY_TOOLS if tools is None else tools,  # emdash's explore toolkit
        model=plain_model(fields.string("model")),
        rule_files=fields.files("rules", "rules"),
        skill_files=fields.files("skills", "skills"),
        **mcp_fields(fields, "mcp_servers"),
    )


def prompt_before_examples(body: str) -> str:
    """The part of ``body`` before a top-level ``# Examples`` heading (outside code fences)."""
    lines = body.split("\n")
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and _EXAMPLES_HEADING.match(line):
            return "\n".join(lines[:index]).strip()
    return body


def read_codeally(fields: Fields) -> ReadResult:
    """Read a CodeAlly agent (``~/.code_ally/agents/*.md``)."""
    fields.check_keys(CODEALLY_KEYS, unknown="warning", ignored=_CODEALLY_IGNORED)
    return fields.build(
        name=fields.name(),
        description=fields.description(required=False),
        prompt=fields.document.body,
        tools=fields.tools("tools"),
        model=plain_model(fields.string("model")),
        temperature=fields.number("temperature", maximum=2.0),
    )


def read_minicc(fields: Fields) -> ReadResult:
    """Read a mini-cc agent (``.mini-cc/agents/*.json``); ``"tools": "*"`` means every tool."""
    fields.check_keys(_MINICC_KEYS, unknown="warning")
    tools = None if fields.get("tools") == "*" else fields.tools("tools")
    return fields.build(
        name=fields.name(),
        description=fields.description(required=False),
        prompt=fields.string("prompt") or "",
        tools=tools,
    )


def read_deepagents(fields: Fields) -> ReadResult:
    """Read a deepagents agent (``.deepagents/agents/<name>/AGENTS.md``); the name defaults to the folder."""
    fields.check_keys(DEEPAGENTS_KEYS, unknown="warning")
    return fields.build(
        name=fields.name(),
        description=fields.description(required=True),
        prompt=fields.document.body,
        model=plain_model(fields.string("model")),
    )


def parse_json_document(text: str, path: Path) -> FrontMatter:
    """Parse a JSON agent file into the same shape as front matter, with the line of each key.

    Raises:
        AgentFileError: The text is not JSON, or not a JSON object.

    """
    try:
        data: Any = json.loads(text.removeprefix("\ufeff"))
    except RecursionError:  # nesting deep enough to stop the decoder itself
        raise too_deep_error(path, 1) from None
    except json.JSONDecodeError as exc:
        raise AgentFileError(
            f"{path}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})",
            hint="fix the JSON syntax (no trailing commas, double-quoted keys and strings)",
            path=str(path),
            line=exc.lineno,
        ) from exc
    if not isinstance(data, dict):
        raise AgentFileError(
            f"{path}:1: the file must hold a JSON object with name, description, tools and prompt",
            path=str(path),
            line=1,
        )
    values = check_size(data, _json_children, path, 1)
    keys = [str(key) for key in data]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return FrontMatter(
        data=dict(zip(keys, data.values(), strict=True)),  # pyright: ignore[reportUnknownArgumentType]
        body="",
        key_lines={key: _json_key_line(text, key) for key in keys},
        values=values,
    )


def _json_children(value: object) -> Iterable[object]:
    if isinstance(value, list):
        return value  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return [item for pair in value.items() for item in pair]  # pyright: ignore[reportUnknownVariableType]
    return ()


def _json_key_line(text: str, key: str) -> int:
    match = re.search(re.escape(json.dumps(key)) + r"\s*:", text)
    return 1 if match is None else text.count("\n", 0, match.start()) + 1

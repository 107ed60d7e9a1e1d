"""Writing a spec as a nestor agent file (used by ``nestor agents create``).

Only keys that differ from their defaults are written, so a generated file reads like one written
by hand. Reading the file back (from the place its rules and skills are found) gives an equal spec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from nestor.agents.fields import canonical_rules
from nestor.agents.spec import AgentSpec


def render_spec_markdown(spec: AgentSpec) -> str:
    """The Markdown text of ``spec`` in nestor's format: YAML front matter, then the prompt.

    Rule and skill files under a ``rules/`` or ``skills/`` directory are written by name; any other
    file by its path. Permission rules are written grouped as ``allow``/``ask``/``deny``.
    """
    front = yaml.dump(
        _front_matter(spec),
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )
    prompt = spec.prompt.strip()
    return f"---\n{front}---\n\n{prompt}\n" if prompt else f"---\n{front}---\n"


class _Dumper(yaml.SafeDumper):
    """Writes lists of plain values inline (``tools: [view, grep]``), everything else in blocks."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    inline = all(isinstance(item, str | int | float | bool) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=inline)


_Dumper.add_representer(list, _represent_list)


def _front_matter(spec: AgentSpec) -> dict[str, Any]:
    data: dict[str, Any] = {"name": spec.name, "description": spec.description}
    optional: list[tuple[str, Any, Any]] = [
        ("mode", spec.mode, "subagent"),
        ("model", spec.model, None),
        ("tools", None if spec.tools is None else list(spec.tools), None),
        ("disallowed_tools", list(spec.disallowed_tools), []),
        ("temperature", spec.temperature, None),
        ("max_turns", spec.max_turns, None),
        ("timeout", spec.max_time_s, None),
        ("max_context_tokens", spec.max_context_tokens, None),
        ("thoroughness", spec.thoroughness, None),
        ("rules", [_reference(path, "rules") for path in spec.rule_files], []),
        ("skills", [_reference(path, "skills") for path in spec.skill_files], []),
        ("color", spec.color, None),
        ("persist", spec.persist, False),
        ("background", spec.background, False),
        ("inherit_context", spec.inherit_context, False),
        ("project_instructions", spec.project_instructions, True),
        ("permission", _permission(spec), {}),
    ]
    for key, value, default in optional:
        if value != default:
            data[key] = value
    return data


def _permission(spec: AgentSpec) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for rule in canonical_rules(spec.permission):
        grouped.setdefault(rule.action, []).append(rule.rule)
    return grouped


def _reference(path: Path, kind: str) -> str:
    """A rule's or skill's name when the file sits where a name finds it, else its path."""
    if kind == "rules" and path.parent.name == "rules" and path.suffix == ".md":
        return path.stem
    if kind == "skills":
        if path.name == "SKILL.md" and path.parent.parent.name == "skills":
            return path.parent.name
        if path.parent.name == "skills" and path.suffix == ".md":
            return path.stem
    return str(path)

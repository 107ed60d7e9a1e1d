"""A sub-agent's system prompt: preamble, the spec's prompt, rules, skills, thoroughness, instructions.

The task prompt itself is the sub-agent's first user message, not part of its system prompt, so a
pooled agent keeps one system prompt per spec and a resumed one gets the new task as a new turn.
"""

from __future__ import annotations

from pathlib import Path

from nestor.agents.spec import AgentSpec, Thoroughness
from nestor.core.files import read_bounded_text

SUBAGENT_PREAMBLE = """\
You are a sub-agent of nestor, started by another agent to do one focused task. You work alone in \
your own session: you cannot see the conversation that led to this task, and nobody can answer \
questions while you work, so decide for yourself and note your assumptions. Your final message is \
all the agent that started you will see: make it a complete, self-contained report of what you \
found or did, concise, citing file paths (and line numbers) for every claim about the code. Do not \
pad it with what you tried and dropped."""

THOROUGHNESS_GUIDANCE: dict[Thoroughness, str] = {
    "quick": "Thoroughness: quick. Do a few targeted searches, find the 2-3 most relevant files, and "
    "report as soon as you have a good answer.",
    "medium": "Thoroughness: medium. Explore moderately: follow imports and callers one or two levels "
    "deep, and report once you are reasonably confident.",
    "thorough": "Thoroughness: thorough. Be comprehensive: check every plausible location, naming "
    "convention and cross-reference, and report only when you have exhausted them.",
}

_MAX_ATTACHED_BYTES = 20_000


def compose_subagent_prompt(
    spec: AgentSpec, *, thoroughness: Thoroughness | None, environment: str = "", instructions: str = ""
) -> str:
    """The system prompt of a sub-agent running ``spec``.

    Args:
        spec: The agent's definition.
        thoroughness: The task's search depth (falls back to the spec's, then none).
        environment: The ``<environment>`` section (directory, platform, date, git).
        instructions: The project's and the user's instruction files, as the main agent gets
            them; left out when the spec says ``project_instructions: false``.

    """
    sections = [SUBAGENT_PREAMBLE, spec.prompt.strip()]
    rules = _attached("Rules", spec.rule_files)
    if rules:
        sections.append(rules)
    skills = _attached("Skills", spec.skill_files)
    if skills:
        sections.append(skills)
    level = thoroughness or spec.thoroughness
    if level is not None:
        sections.append(THOROUGHNESS_GUIDANCE[level])
    if environment:
        sections.append(environment)
    if instructions and spec.project_instructions:
        sections.append(instructions)
    return "\n\n".join(section for section in sections if section)


def _attached(heading: str, paths: tuple[Path, ...]) -> str:
    """The text of ``paths`` under a heading; a file that vanished since the spec was read is named."""
    blocks: list[str] = []
    for path in paths:
        try:
            read = read_bounded_text(path, limit_bytes=_MAX_ATTACHED_BYTES)
        except OSError as exc:
            blocks.append(f"[{path} could not be read: {exc.strerror}]")
            continue
        text = read.text.strip()
        if read.cut:
            text += f"\n[... {path.name} cut at {_MAX_ATTACHED_BYTES:,} bytes]"
        blocks.append(f"### {path.stem if path.name != 'SKILL.md' else path.parent.name}\n\n{text}")
    return f"## {heading}\n\n" + "\n\n".join(blocks) if blocks else ""

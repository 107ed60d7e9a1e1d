"""Every agent's system prompt: the main agent's and each sub-agent's, with instructions and environment.

The main agent's is its spec's prompt, the instruction files and the environment. A sub-agent's
(:func:`compose_subagent_prompt`) is a preamble, its spec's prompt, rules, skills, thoroughness,
the environment and the instruction files; its task prompt is its first user message, not part of
its system prompt, so a pooled agent keeps one system prompt per spec and a resumed one gets the
new task as a new turn.

Instruction files are read fresh for every run, so edits to ``AGENTS.md`` apply at the next prompt:
the user's (``~/.config/nestor/AGENTS.md``) first, then the project's ``AGENTS.md``, ``CLAUDE.md``
and ``NESTOR.md``, in that order, each under a heading naming its file. A project's files come with
the repository, so only regular files whose real path lies inside the project are read (not a link
to ``~/.ssh`` or ``/proc/self/environ``, not a FIFO), each up to a size limit, with a note when cut.
"""

from __future__ import annotations

import asyncio
import platform
import time
from datetime import datetime
from importlib import resources
from pathlib import Path

from nestor.agents.spec import AgentSpec, Thoroughness
from nestor.core.files import UnsafeFileError, read_bounded_text
from nestor.tools.git.location import find_repository
from nestor.tools.git.runner import run_git_async

PROJECT_INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "NESTOR.md")
_MAX_INSTRUCTION_BYTES = 40_000
_MAX_GIT_STATUS_LINES = 40


def builtin_agent_prompt(name: str) -> str:
    """Return the body (after the YAML front matter) of a built-in agent's Markdown file."""
    text = resources.files("nestor.agents.builtin").joinpath(f"{name}.md").read_text(encoding="utf-8")
    return strip_front_matter(text)


def strip_front_matter(text: str) -> str:
    """Return ``text`` without a leading ``---`` ... ``---`` YAML block."""
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            return text[end + 4 :].lstrip("\n")
    return text


async def build_system_prompt(
    agent_prompt: str,
    project_root: Path,
    *,
    user_config_dir: Path | None,
    now: datetime | None = None,
) -> str:
    """Compose the system prompt of an agent working in ``project_root``."""
    sections = [agent_prompt.strip(), await environment_section(project_root, now=now)]
    instructions = read_instructions(project_root, user_config_dir)
    if instructions:
        sections.append(instructions)
    return "\n\n".join(sections)


def read_instructions(project_root: Path, user_config_dir: Path | None) -> str:
    """Return the user's and the project's instruction files as one tagged block ('' when none)."""
    candidates: list[tuple[str, Path, Path | None]] = []
    if user_config_dir is not None:
        candidates.append(("user instructions", user_config_dir / "AGENTS.md", None))
    candidates.extend(
        (f"project instructions ({name})", project_root / name, project_root)
        for name in PROJECT_INSTRUCTION_FILES
    )
    blocks: list[str] = []
    for label, path, inside in candidates:
        try:
            read = read_bounded_text(path, limit_bytes=_MAX_INSTRUCTION_BYTES, inside=inside)
        except UnsafeFileError as exc:
            blocks.append(
                f'<instructions source="{label}" path="{path}">[not read: {exc.strerror}]</instructions>'
            )
            continue
        except OSError:
            continue
        text = read.text.strip()
        if not text:
            continue
        if read.cut:
            text += f"\n[... {path.name} cut at {_MAX_INSTRUCTION_BYTES:,} bytes]"
        blocks.append(f'<instructions source="{label}" path="{path}">\n{text}\n</instructions>')
    return "\n\n".join(blocks)


async def environment_section(project_root: Path, *, now: datetime | None = None) -> str:
    """Describe where the agent works: directory, platform, date, git branch and status."""
    now = now or datetime.now().astimezone()
    lines = [
        "<environment>",
        f"Working directory (project root): {project_root}",
        f"Platform: {platform.system()} {platform.release()} ({platform.machine()})",
        f"Date: {now:%Y-%m-%d %A}",
    ]
    repository = find_repository(project_root)
    if repository is None:
        lines.append("Git repository: no")
    else:
        lines.append(f"Git repository: yes, branch {repository.head().describe()}")
        done = await run_git_async(project_root, "status", "--short", "--ignore-submodules=all")
        status = done.stdout.decode("utf-8", errors="replace") if done is not None and done.ok else None
        status_lines = (status or "").splitlines()
        if status is None:
            lines.append("Git status: not read")
        elif not status_lines:
            lines.append("Git status: clean")
        else:
            shown = status_lines[:_MAX_GIT_STATUS_LINES]
            more = len(status_lines) - len(shown)
            lines.append("Git status:")
            lines.extend(f"  {line}" for line in shown)
            if more:
                lines.append(f"  ... and {more} more")
    lines.append("</environment>")
    return "\n".join(lines)


class EnvironmentCache:
    """The environment section of one project, rebuilt at most every ``ttl_s`` seconds.

    Sub-agents started together share one section instead of each running ``git status`` (a fork
    blocks the event loop for milliseconds, which twenty parallel agents add up).
    """

    def __init__(self, project_root: Path, *, ttl_s: float = 5.0) -> None:
        self.project_root = project_root
        self.ttl_s = ttl_s
        self._section: str | None = None
        self._built_at = 0.0
        self._lock = asyncio.Lock()

    async def get(self) -> str:
        """The section, from the cache when it is recent enough."""
        async with self._lock:
            now = time.monotonic()
            if self._section is None or now - self._built_at > self.ttl_s:
                self._section = await environment_section(self.project_root)
                self._built_at = now
            return self._section


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

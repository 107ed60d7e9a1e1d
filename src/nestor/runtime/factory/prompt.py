"""System prompt assembly: the agent's prompt, the project's instructions and the environment.

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

"""Where agent files are read from, and their listing (a project's within its limits).

Each :class:`AgentLocation` is one directory of one ecosystem; :func:`agent_locations` gives them in
precedence order. :func:`list_agent_files` yields a location's agent files in name order, building a
path only for the files the caller goes on to take. Given a :class:`LimitTally` it counts every
directory entry it looks at (and every directory it opens, every ``AGENTS.md`` it looks for) and
stops when they run out, and it walks nested folders without recursion, so neither a folder of a
million entries, nor thousands of empty ones, nor one nested a thousand deep stalls or crashes a
start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from nestor.agents.file_limits import LimitTally
from nestor.agents.spec import AgentSource

Layout: TypeAlias = Literal["flat", "tree", "folders"]


@dataclass(frozen=True, slots=True)
class AgentLocation:
    """One directory agents are read from.

    Attributes:
        ecosystem: The file format of the directory.
        source: ``project`` or ``user``.
        directory: The directory.
        layout: ``flat`` (``*.md`` or ``*.json`` in it), ``tree`` (``**/*.md``) or ``folders``
            (``<name>/AGENTS.md``).
        config_dirs: Where the format's ``rules/`` and ``skills/`` are looked up, in order.

    """

    ecosystem: str
    source: AgentSource
    directory: Path
    layout: Layout = "flat"
    config_dirs: tuple[Path, ...] = ()

    @property
    def suffix(self) -> str:
        """The file name ending of agent files here."""
        return ".json" if self.ecosystem == "mini-cc" else ".md"


def agent_locations(project_root: Path, *, home: Path, user_config_dir: Path) -> tuple[AgentLocation, ...]:
    """Every directory agents are read from, in precedence order (computed, not checked on disk)."""
    root = project_root
    opencode_user = home / ".config" / "opencode"
    return (
        AgentLocation(
            "nestor", "project", root / ".nestor" / "agents", "flat", (root / ".nestor", user_config_dir)
        ),
        AgentLocation(
            "claude", "project", root / ".claude" / "agents", "flat", (root / ".claude", home / ".claude")
        ),
        AgentLocation("opencode", "project", root / ".opencode" / "agent", "tree"),
        AgentLocation("opencode", "project", root / ".opencode" / "agents", "tree"),
        AgentLocation("gemini", "project", root / ".gemini" / "agents"),
        AgentLocation("emdash", "project", root / ".emdash" / "agents", "flat", (root / ".emdash",)),
        AgentLocation("mini-cc", "project", root / ".mini-cc" / "agents"),
        AgentLocation("deepagents", "project", root / ".deepagents" / "agents", "folders"),
        AgentLocation("nestor", "user", user_config_dir / "agents", "flat", (user_config_dir,)),
        AgentLocation("claude", "user", home / ".claude" / "agents", "flat", (home / ".claude",)),
        AgentLocation("opencode", "user", opencode_user / "agent", "tree"),
        AgentLocation("opencode", "user", opencode_user / "agents", "tree"),
        AgentLocation("gemini", "user", home / ".gemini" / "agents"),
        AgentLocation("codeally", "user", home / ".code_ally" / "agents"),
        AgentLocation("deepagents", "user", home / ".deepagents" / "agents", "folders"),
    )


def list_agent_files(location: AgentLocation, tally: LimitTally | None = None) -> Iterator[tuple[Path, str]]:
    """The agent files of ``location`` with each one's default name; nothing when it is missing.

    Files come in name order (a tree: a folder's files, then its subfolders, each in name order).
    With a ``tally``, listing stops once its directory entries run out.
    """
    directory = location.directory
    if location.layout == "folders":
        for name in _names(directory, tally, folders=True):
            path = directory / name / "AGENTS.md"
            if tally is not None and not tally.look_at_entry(directory):
                return
            if path.is_file():
                yield path, name
    elif location.layout == "flat":
        for name in _names(directory, tally, suffix=location.suffix):
            yield directory / name, name[: -len(location.suffix)]
    else:
        yield from _tree(directory, location.suffix, tally)


def _tree(directory: Path, suffix: str, tally: LimitTally | None) -> Iterator[tuple[Path, str]]:
    pending = [directory]
    while pending and (tally is None or tally.listing):
        current = pending.pop()
        folders: list[str] = []
        for name in _names(current, tally, suffix=suffix, folders_into=folders):
            yield current / name, name[: -len(suffix)]
        pending.extend(current / name for name in sorted(folders, reverse=True))


def _names(
    directory: Path,
    tally: LimitTally | None,
    *,
    suffix: str = "",
    folders: bool = False,
    folders_into: list[str] | None = None,
) -> list[str]:
    """The sorted names of ``directory``'s visible files ending in ``suffix`` (or its folders).

    ``folders_into`` collects the visible subfolders besides (links to folders are not followed).
    """
    names: list[str] = []
    if tally is not None and not tally.look_at_entry(directory):  # opening it costs as much as an entry
        return names
    try:
        with os.scandir(directory) as iterator:
            for entry in iterator:
                if tally is not None and not tally.look_at_entry(directory):
                    break
                name = entry.name
                if name.startswith("."):
                    continue
                if folders:
                    if entry.is_dir():
                        names.append(name)
                elif folders_into is not None and entry.is_dir(follow_symlinks=False):
                    folders_into.append(name)
                elif name.endswith(suffix) and entry.is_file():
                    names.append(name)
    except OSError:
        return []
    return sorted(names)

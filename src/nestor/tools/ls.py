"""The ``ls`` tool: a directory as an indented tree, minus what nobody wants to read.

A FIFO, socket or device is listed too, marked with what it is (the file tools refuse to read one),
also inside a git work tree, where git lists only files and links.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections import defaultdict, deque
from pathlib import Path

from pydantic import BaseModel, Field

from nestor.core.errors import ToolError
from nestor.core.files import file_kind
from nestor.tools._globbing import GlobPattern, compile_glob
from nestor.tools._search import git_ignored, git_listed_files
from nestor.tools._text import missing_file_error
from nestor.tools.base import Tool, ToolContext, ToolResult

MAX_ENTRIES = 1000
SKIPPED_NAMES = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"}
)

Entries = dict[str, str]
"""Relative ``/``-separated path -> what follows its name: ``/`` for a directory, "" for a file, or what
kind of file it is when it is not a regular one (a FIFO, a socket, a device)."""
DIRECTORY = "/"
FILE = ""
_MOST_SPECIAL = 100
"""The most FIFOs, sockets and devices looked for beside what git lists (each is asked about)."""


class LsParams(BaseModel):
    """Arguments of the ``ls`` tool."""

    path: str = Field(
        default=".", description="The directory to list: absolute, or relative to the project root."
    )
    ignore: list[str] = Field(
        default_factory=list,
        description="Glob patterns of entries to leave out, e.g. ['*.log', 'build/'].",
    )


class LsTool(Tool[LsParams]):
    """Lists a directory tree; inside a git work tree, what ``.gitignore`` ignores is left out."""

    name = "ls"
    params_model = LsParams

    async def run(self, params: LsParams, ctx: ToolContext) -> ToolResult:
        """List the directory, breadth first, up to :data:`MAX_ENTRIES` entries."""
        directory = ctx.resolve(params.path)
        shown_as = ctx.display_path(directory)
        if not directory.exists():
            raise missing_file_error(directory, shown_as)
        if not directory.is_dir():
            if not directory.is_file():
                raise ToolError(f"{shown_as} is {file_kind(directory.stat().st_mode)}, not a directory.")
            raise ToolError(f"{shown_as} is a file, not a directory; use the view tool to read it.")
        patterns = [compile_glob(pattern) for pattern in params.ignore]
        entries, truncated = await asyncio.to_thread(collect_entries, directory, patterns, MAX_ENTRIES)
        lines = render_tree(f"{directory}/", entries)
        if not entries:
            lines.append("  (empty)")
        if truncated:
            lines.append(
                f"\n(Listing cut at {MAX_ENTRIES} entries, shallowest first. "
                "List a subdirectory, or pass ignore patterns, to see the rest.)"
            )
        metadata = {"path": str(directory), "entries": len(entries), "truncated": truncated}
        return ToolResult(content="\n".join(lines), metadata=metadata)


def collect_entries(directory: Path, ignore: list[GlobPattern], limit: int) -> tuple[Entries, bool]:
    """Collect up to ``limit`` entries under ``directory``, shallowest first.

    Returns:
        The entries and whether more were left out.

    """
    listed = git_listed_files(directory)
    # git lists nothing inside an ignored directory; someone asking to list one wants its content.
    if not listed:
        return _walk_breadth_first(directory, ignore, limit)
    return _entries_from_git(directory, listed, ignore, limit)


def _is_excluded(relative: str, is_dir: bool, ignore: list[GlobPattern]) -> bool:
    if relative.rpartition("/")[2] in SKIPPED_NAMES:
        return True
    candidates = (relative, f"{relative}/") if is_dir else (relative,)
    return any(pattern.matches(candidate) for pattern in ignore for candidate in candidates)


def _walk_breadth_first(directory: Path, ignore: list[GlobPattern], limit: int) -> tuple[Entries, bool]:
    entries: Entries = {}
    queue: deque[str] = deque([""])
    while queue:
        parent = queue.popleft()
        for name, marker in _scan(directory / parent):
            relative = f"{parent}/{name}" if parent else name
            if _is_excluded(relative, marker == DIRECTORY, ignore):
                continue
            if len(entries) == limit:
                return entries, True
            entries[relative] = marker
            if marker == DIRECTORY:
                queue.append(relative)
    return entries, False


def _scan(folder: Path) -> list[tuple[str, str]]:
    """The names in ``folder`` with their markers (links are files: not followed), by name."""
    found: list[tuple[str, str]] = []
    try:
        with os.scandir(folder) as scan:
            for entry in scan:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                found.append((entry.name, _marker(mode)))
    except OSError:
        return []
    return sorted(found)


def _marker(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return DIRECTORY
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return FILE
    return f"  ({file_kind(mode)}, not a regular file: view cannot read it)"


def _entries_from_git(
    directory: Path, listed: list[str], ignore: list[GlobPattern], limit: int
) -> tuple[Entries, bool]:
    candidates: Entries = {}
    for name in listed:
        marker = DIRECTORY if name.endswith("/") else FILE
        name = name.rstrip("/")
        # git keeps listing tracked files that were deleted from the work tree.
        if not os.path.lexists(directory / name):
            continue
        candidates[name] = marker
        parent = name.rpartition("/")[0]
        while parent and parent not in candidates:
            candidates[parent] = DIRECTORY
            parent = parent.rpartition("/")[0]
    excluded: dict[str, bool] = {}

    def excluded_with_ancestors(relative: str) -> bool:
        if relative not in excluded:
            parent = relative.rpartition("/")[0]
            excluded[relative] = (bool(parent) and excluded_with_ancestors(parent)) or _is_excluded(
                relative, candidates[relative] == DIRECTORY, ignore
            )
        return excluded[relative]

    def by_depth(name: str) -> tuple[int, str]:
        return name.count("/"), name

    kept = sorted((name for name in candidates if not excluded_with_ancestors(name)), key=by_depth)
    shown_folders = ["", *(name for name in kept[:limit] if candidates[name] == DIRECTORY)]
    special = _special_files(directory, shown_folders, ignore)
    candidates |= special
    kept = sorted([*kept, *special], key=by_depth)
    return {name: candidates[name] for name in kept[:limit]}, len(kept) > limit


def _special_files(directory: Path, folders: list[str], ignore: list[GlobPattern]) -> Entries:
    """The FIFOs, sockets and devices in ``folders`` that git would not ignore (git lists none)."""
    found: Entries = {}
    for folder in folders:
        for name, marker in _scan(directory / folder):
            relative = f"{folder}/{name}" if folder else name
            if marker not in (DIRECTORY, FILE) and not _is_excluded(relative, False, ignore):
                found[relative] = marker
            if len(found) == _MOST_SPECIAL:
                break
    ignored = git_ignored(directory, list(found))
    return {name: marker for name, marker in found.items() if name not in ignored}


def render_tree(root_label: str, entries: Entries) -> list[str]:
    """Render ``entries`` under ``root_label``, two spaces per level, directories first."""
    children: defaultdict[str, list[str]] = defaultdict(list)
    for relative in entries:
        children[relative.rpartition("/")[0]].append(relative)
    lines = [root_label]
    stack = list(reversed(_ordered_children(children[""], entries, 1)))
    while stack:
        relative, depth = stack.pop()
        marker = entries[relative]
        lines.append(f"{'  ' * depth}{relative.rpartition('/')[2]}{marker}")
        if marker == DIRECTORY:
            stack.extend(reversed(_ordered_children(children[relative], entries, depth + 1)))
    return lines


def _ordered_children(names: list[str], entries: Entries, depth: int) -> list[tuple[str, int]]:
    ordered = sorted(
        names, key=lambda name: (entries[name] != DIRECTORY, name.rpartition("/")[2].lower(), name)
    )
    return [(name, depth) for name in ordered]

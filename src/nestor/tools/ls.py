"""The ``ls`` tool: a directory as an indented tree, minus what nobody wants to read."""

from __future__ import annotations

import asyncio
import os
from collections import defaultdict, deque
from pathlib import Path

from pydantic import BaseModel, Field

from nestor.core.errors import ToolError
from nestor.core.files import file_kind
from nestor.tools._globbing import GlobPattern, compile_glob
from nestor.tools._search import git_listed_files
from nestor.tools._text import missing_file_error
from nestor.tools.base import Tool, ToolContext, ToolResult

MAX_ENTRIES = 1000
SKIPPED_NAMES = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"}
)

Entries = dict[str, bool]
"""Relative ``/``-separated path -> whether it is a directory."""


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
        try:
            with os.scandir(directory / parent) as scan:
                children = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            continue
        for child in children:
            relative = f"{parent}/{child.name}" if parent else child.name
            is_dir = child.is_dir(follow_symlinks=False)
            if _is_excluded(relative, is_dir, ignore):
                continue
            if len(entries) == limit:
                return entries, True
            entries[relative] = is_dir
            if is_dir:
                queue.append(relative)
    return entries, False


def _entries_from_git(
    directory: Path, listed: list[str], ignore: list[GlobPattern], limit: int
) -> tuple[Entries, bool]:
    candidates: Entries = {}
    for name in listed:
        is_dir = name.endswith("/")
        name = name.rstrip("/")
        # git keeps listing tracked files that were deleted from the work tree.
        if not os.path.lexists(directory / name):
            continue
        candidates[name] = is_dir
        parent = name.rpartition("/")[0]
        while parent and parent not in candidates:
            candidates[parent] = True
            parent = parent.rpartition("/")[0]
    excluded: dict[str, bool] = {}

    def excluded_with_ancestors(relative: str) -> bool:
        if relative not in excluded:
            parent = relative.rpartition("/")[0]
            excluded[relative] = (bool(parent) and excluded_with_ancestors(parent)) or _is_excluded(
                relative, candidates[relative], ignore
            )
        return excluded[relative]

    kept = sorted(
        (name for name in candidates if not excluded_with_ancestors(name)),
        key=lambda name: (name.count("/"), name),
    )
    return {name: candidates[name] for name in kept[:limit]}, len(kept) > limit


def render_tree(root_label: str, entries: Entries) -> list[str]:
    """Render ``entries`` under ``root_label``, two spaces per level, directories first."""
    children: defaultdict[str, list[str]] = defaultdict(list)
    for relative in entries:
        children[relative.rpartition("/")[0]].append(relative)
    lines = [root_label]
    stack = list(reversed(_ordered_children(children[""], entries, 1)))
    while stack:
        relative, depth = stack.pop()
        is_dir = entries[relative]
        lines.append(f"{'  ' * depth}{relative.rpartition('/')[2]}{'/' if is_dir else ''}")
        if is_dir:
            stack.extend(reversed(_ordered_children(children[relative], entries, depth + 1)))
    return lines


def _ordered_children(names: list[str], entries: Entries, depth: int) -> list[tuple[str, int]]:
    ordered = sorted(names, key=lambda name: (not entries[name], name.rpartition("/")[2].lower(), name))
    return [(name, depth) for name in ordered]

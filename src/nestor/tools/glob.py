"""The ``glob`` tool: find files by name pattern, newest first."""

from __future__ import annotations

import asyncio
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from nestor.core.errors import ToolError
from nestor.core.files import file_kind
from nestor.tools._globbing import basename_prefilter, compile_glob
from nestor.tools._search import (
    RipgrepLookup,
    RipgrepSetting,
    describe_location,
    list_files,
    newest_first,
    relative_posix,
    resolve_ripgrep,
)
from nestor.tools._text import missing_file_error
from nestor.tools.base import (
    PermissionRequest,
    Tool,
    ToolContext,
    ToolResult,
    WithheldFilter,
    path_permission,
)

MAX_RESULTS = 100
_GLOB_CHARACTERS = frozenset("*?[{")


class GlobParams(BaseModel):
    """Arguments of the ``glob`` tool."""

    pattern: str = Field(
        description="The glob to match file paths against, relative to `path`, e.g. '**/*.py', "
        "'src/**/*.{ts,tsx}' or '*.md' (a pattern without '/' matches file names at any depth)."
    )
    path: str = Field(
        default=".", description="The directory to search: absolute, or relative to the project root."
    )


class GlobTool(Tool[GlobParams]):
    """Finds files whose path matches a glob, newest first, leaving out ``.gitignore``'d files.

    Args:
        rg_path: The ``rg`` binary to list files with; :attr:`RipgrepLookup.AUTO` (the default)
            looks for one, None forces the pure-Python fallback.

    """

    name = "glob"
    params_model = GlobParams

    def __init__(self, rg_path: RipgrepSetting = RipgrepLookup.AUTO) -> None:
        self.rg_path = resolve_ripgrep(rg_path)

    def permission(self, params: GlobParams, ctx: ToolContext) -> PermissionRequest | None:
        """A read of the search root (the leading directories of an absolute pattern, if any)."""
        directory, _ = search_root(params, ctx)
        return path_permission(self.name, "read", str(directory), ctx)

    async def run(self, params: GlobParams, ctx: ToolContext) -> ToolResult:
        """List matching files, newest first, at most :data:`MAX_RESULTS`."""
        directory, pattern_text = search_root(params, ctx)
        shown_as = ctx.display_path(directory)
        if not directory.exists():
            raise missing_file_error(directory, shown_as)
        if not directory.is_dir():
            kind = "a file" if directory.is_file() else file_kind(directory.stat().st_mode)
            raise ToolError(f"{shown_as} is {kind}, not a directory; give glob a directory to search.")
        pattern = compile_glob(pattern_text)
        files = await list_files(directory, self.rg_path, basename_prefilter(pattern))
        visible = WithheldFilter(self.name, ctx)
        matching = [
            path for path in files if pattern.matches(relative_posix(path, directory)) and visible(path)
        ]
        dated = await asyncio.to_thread(newest_first, matching)
        metadata: dict[str, object] = {
            "count": len(dated),
            "truncated": len(dated) > MAX_RESULTS,
            "backend": "python" if self.rg_path is None else "ripgrep",
            "withheld": visible.withheld,
        }
        note = visible.note()
        if not dated:
            message = f"No files found matching {params.pattern!r} in {describe_location(shown_as)}."
            return ToolResult(content=f"{message}\n{note}" if note else message, metadata=metadata)
        lines = [ctx.display_path(path) for path, _ in dated[:MAX_RESULTS]]
        metadata["paths"] = list(lines)  # the files the result names, for a sub-agent's files_explored
        if len(dated) > MAX_RESULTS:
            lines.append(
                f"\n(Showing the {MAX_RESULTS} newest of {len(dated)} matching files. "
                "Use a more specific pattern or path to see the others.)"
            )
        if note:
            lines.append(f"\n{note}")
        return ToolResult(content="\n".join(lines), metadata=metadata)


def search_root(params: GlobParams, ctx: ToolContext) -> tuple[Path, str]:
    """Return the directory to search and the pattern relative to it.

    Models often pass an absolute pattern such as ``/repo/src/**/*.py``; its leading directories
    (up to the first glob character) become the search root.
    """
    pattern = params.pattern.strip()
    if not PurePosixPath(pattern).is_absolute():
        return ctx.resolve(params.path), pattern
    parts = pattern.split("/")
    fixed = 0
    while fixed < len(parts) - 1 and not _GLOB_CHARACTERS.intersection(parts[fixed]):
        fixed += 1
    # The leading '/' keeps the rest anchored: '/repo/*.py' means files directly in /repo.
    return ctx.resolve("/".join(parts[:fixed]) or "/"), "/" + "/".join(parts[fixed:])

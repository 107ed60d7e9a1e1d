"""The ``grep`` tool: search file contents with ripgrep, or with Python's ``re`` when it is missing."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from nestor.core.errors import ToolError
from nestor.core.files import file_kind, read_bounded_bytes
from nestor.tools._globbing import GlobPattern, basename_prefilter, compile_glob
from nestor.tools._search import (
    GIT_DIR_NAME,
    RipgrepLookup,
    RipgrepSetting,
    describe_location,
    list_files_without_ripgrep,
    name_type_args,
    newest_first,
    relative_posix,
    resolve_ripgrep,
    ripgrep_error,
    run_streaming,
)
from nestor.tools._text import BINARY_SNIFF_BYTES, missing_file_error, special_file_error
from nestor.tools.base import Tool, ToolContext, ToolResult, WithheldFilter

MAX_MATCHES = 100
MAX_MATCH_LINE_CHARS = 500
# The fallback reads whole files; ripgrep streams, so only the fallback needs a ceiling.
MAX_FALLBACK_FILE_BYTES = 20 * 1024 * 1024
_REGEX_HINT = "fix it, or set literal_text to true to search for the exact text"


class GrepParams(BaseModel):
    """Arguments of the ``grep`` tool."""

    pattern: str = Field(
        min_length=1,
        description="The regular expression to search for (or the exact text, with literal_text).",
    )
    path: str = Field(
        default=".",
        description="The directory (or file) to search: absolute, or relative to the project root.",
    )
    include: str | None = Field(
        default=None,
        description="Only search files whose name matches this glob, e.g. '*.py' or '*.{ts,tsx}'.",
    )
    literal_text: bool = Field(
        default=False,
        description="True to search for the pattern as exact text, so characters like '.', '(' "
        "and '[' need no escaping.",
    )


class MatchCollector:
    """Gathers matching lines per file, keeping at most :data:`MAX_MATCHES` per file.

    No file can contribute more than the overall cap, so the rest only needs counting.
    """

    def __init__(self, accepts: Callable[[Path], bool]) -> None:
        self.accepts = accepts
        self.lines: dict[Path, list[tuple[int, str]]] = {}
        self.total = 0

    def add(self, path: Path, line_number: int, text: str) -> None:
        """Record one matching line of ``path`` (unless the include filter rejects the file)."""
        if not self.accepts(path):
            return
        self.total += 1
        kept = self.lines.setdefault(path, [])
        if len(kept) < MAX_MATCHES:
            kept.append((line_number, text))


class GrepTool(Tool[GrepParams]):
    """Searches file contents for a regex or exact text; matches grouped by file, newest file first.

    Args:
        rg_path: The ``rg`` binary to search with; :attr:`RipgrepLookup.AUTO` (the default) looks
            for one, None forces the pure-Python fallback.

    """

    name = "grep"
    params_model = GrepParams
    read_only = True

    def __init__(self, rg_path: RipgrepSetting = RipgrepLookup.AUTO) -> None:
        self.rg_path = resolve_ripgrep(rg_path)

    async def run(self, params: GrepParams, ctx: ToolContext) -> ToolResult:
        """Search, then render at most :data:`MAX_MATCHES` matches, newest file first."""
        target = ctx.resolve(params.path)
        shown_as = ctx.display_path(target)
        if not target.exists():
            raise missing_file_error(target, shown_as)
        if not target.is_dir() and not target.is_file():
            kind = file_kind(target.stat().st_mode)
            raise special_file_error(shown_as, kind, "grep searches regular files and directories")
        include = compile_glob(params.include) if params.include and target.is_dir() else None
        included = _include_filter(target, include)
        visible = WithheldFilter(self.name, ctx)
        collector = MatchCollector(lambda path: included(path) and visible(path))
        if self.rg_path is None:
            regex = _compile_regex(params.pattern, params.literal_text)
            await asyncio.to_thread(search_without_ripgrep, target, regex, collector)
        else:
            await search_with_ripgrep(self.rg_path, target, params, include, collector)
        metadata = {
            "matches": collector.total,
            "files": len(collector.lines),
            "truncated": collector.total > MAX_MATCHES,
            "backend": "python" if self.rg_path is None else "ripgrep",
            "withheld": visible.withheld,
        }
        note = visible.note()
        if not collector.total:
            message = f"No matches found for {params.pattern!r} in {describe_location(shown_as)}."
            return ToolResult(content=f"{message}\n{note}" if note else message, metadata=metadata)
        dated = await asyncio.to_thread(newest_first, collector.lines)
        # Where the first matches are, for callers that rank them (the small-model harness), file by
        # file in path order: which files are newest must not change which matches it ranks.
        by_path = sorted(dated, key=lambda item: str(item[0]))
        metadata["hits"] = [
            [ctx.display_path(path), number] for path, number, _ in shown_matches(by_path, collector)
        ]
        content = render_matches(dated, collector, ctx)
        return ToolResult(content=f"{content}\n\n{note}" if note else content, metadata=metadata)


def _include_filter(target: Path, include: GlobPattern | None) -> Callable[[Path], bool]:
    if include is None:
        return lambda _path: True
    return lambda path: include.matches(relative_posix(path, target))


def _compile_regex(pattern: str, literal_text: bool) -> re.Pattern[str]:
    if literal_text:
        return re.compile(re.escape(pattern))
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"Invalid regular expression {pattern!r}: {exc}; {_REGEX_HINT}.") from None


async def search_with_ripgrep(
    rg_path: str, target: Path, params: GrepParams, include: GlobPattern | None, collector: MatchCollector
) -> None:
    """Run ``rg --json`` over ``target`` and feed its matches to ``collector``."""
    args = [rg_path, "--json", "--hidden", "--no-messages", "--glob", f"!{GIT_DIR_NAME}"]
    if params.literal_text:
        args.append("--fixed-strings")
    if include is not None:
        args += name_type_args(basename_prefilter(include))
    args += ["--regexp", params.pattern, "--", str(target)]

    def on_record(record: bytes) -> None:
        event = json.loads(record)
        if event.get("type") != "match":
            return
        data = event["data"]
        path = Path(os.fsdecode(_json_bytes(data["path"])))
        text = _json_bytes(data["lines"]).decode("utf-8", errors="replace")
        collector.add(path, int(data["line_number"]), text.rstrip("\n").removesuffix("\r"))

    return_code, stderr = await run_streaming(args, b"\n", on_record)
    if return_code not in (0, 1) and not collector.total:
        error = ripgrep_error(stderr)
        if "regex" in stderr:
            raise ToolError(f"{error.message}; {_REGEX_HINT}.")
        raise error


def _json_bytes(field: dict[str, Any]) -> bytes:
    # rg reports UTF-8 as "text" and anything else base64-encoded as "bytes".
    if "text" in field:
        return str(field["text"]).encode("utf-8", errors="surrogateescape")
    return base64.b64decode(field["bytes"])


def search_without_ripgrep(target: Path, regex: re.Pattern[str], collector: MatchCollector) -> None:
    r"""Search ``target`` (a file, or the files :func:`list_files_without_ripgrep` lists) with ``regex``.

    Like ripgrep, skips binary files (a NUL byte near the start) and matches each line without
    its ``\n`` but with any ``\r``, so ``$`` does not match before a CRLF.
    """
    files = [target] if target.is_file() else list_files_without_ripgrep(target)
    for path in files:
        try:
            data = read_bounded_bytes(path, limit_bytes=MAX_FALLBACK_FILE_BYTES, whole=True).data
        except OSError:
            continue
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            continue
        lines = data.decode("utf-8", errors="replace").split("\n")
        if lines[-1] == "":
            lines.pop()
        for number, line in enumerate(lines, start=1):
            if regex.search(line):
                collector.add(path, number, line.removesuffix("\r"))


def render_matches(dated: list[tuple[Path, float]], collector: MatchCollector, ctx: ToolContext) -> str:
    """Render matches grouped by file in ``dated`` order, stopping after :data:`MAX_MATCHES` lines."""
    total = collector.total
    files = len(dated)
    heading = (
        f"Found {total} {'match' if total == 1 else 'matches'} in {files} {'file' if files == 1 else 'files'}"
    )
    blocks: list[str] = [heading + (f"; showing the first {MAX_MATCHES}." if total > MAX_MATCHES else ".")]
    by_file: dict[Path, list[str]] = {}
    for path, number, text in shown_matches(dated, collector):
        by_file.setdefault(path, []).append(f"  {number}: {_clip(text)}")
    blocks.extend(f"{ctx.display_path(path)}:\n" + "\n".join(rows) for path, rows in by_file.items())
    if total > MAX_MATCHES:
        blocks.append(
            f"(Showing the first {MAX_MATCHES} of {total} matches. "
            "Narrow the pattern, path or include to see the rest.)"
        )
    return "\n\n".join(blocks)


def shown_matches(dated: list[tuple[Path, float]], collector: MatchCollector) -> list[tuple[Path, int, str]]:
    """The matches shown, at most :data:`MAX_MATCHES`, file by file in ``dated`` order."""
    shown: list[tuple[Path, int, str]] = []
    for path, _ in dated:
        for number, text in collector.lines[path][: MAX_MATCHES - len(shown)]:
            shown.append((path, number, text))
        if len(shown) >= MAX_MATCHES:
            break
    return shown


def _clip(text: str) -> str:
    if len(text) <= MAX_MATCH_LINE_CHARS:
        return text
    return f"{text[:MAX_MATCH_LINE_CHARS]}… [line cut: {len(text)} characters]"

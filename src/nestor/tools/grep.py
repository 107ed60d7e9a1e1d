"""The ``grep`` tool: search file contents with ripgrep, or with Python's ``re`` when it is missing."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path

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
    relative_posix,
    resolve_ripgrep,
    ripgrep_error,
    run_chunks,
)
from nestor.tools._text import BINARY_SNIFF_BYTES, missing_file_error, special_file_error
from nestor.tools.base import Tool, ToolContext, ToolResult, WithheldFilter

MAX_MATCHES = 100
MAX_MATCH_LINE_CHARS = 500
RG_MAX_COLUMNS = 4096
"""ripgrep sends lines longer than this (in bytes) as a preview: a minified file's one line can be
megabytes, and only :data:`MAX_MATCH_LINE_CHARS` characters of it are shown."""
# The fallback reads whole files; ripgrep streams, so only the fallback needs a ceiling.
_NEWLINE = ord("\n")
MAX_FALLBACK_FILE_BYTES = 20 * 1024 * 1024
MAX_FALLBACK_LINE_CHARS = 10_000
"""The fallback searches only this much of a longer line: Python's ``re`` can take time quadratic in
a line's length (``a.*z`` on a megabyte-long minified line would never finish); ripgrep cannot."""
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


class FileMatches:
    """One file's kept matching lines (at most :data:`MAX_MATCHES`), clipped.

    ripgrep's output lines are kept as they came and parsed only when asked for: most are never
    shown (only the first :data:`MAX_MATCHES` of all files are).
    """

    __slots__ = ("_parsed", "_raw", "kept", "mtime")

    def __init__(self, mtime: float | None) -> None:
        self._parsed: list[tuple[int, str]] = []
        self._raw: list[bytes] = []
        self.kept = 0
        self.mtime = mtime
        """When the file was last modified, None when it vanished."""

    def add(self, line_number: int, text: str) -> None:
        """Keep one line."""
        self._parsed.append((line_number, clip(text)))
        self.kept += 1

    def add_output(self, lines: list[bytes]) -> None:
        """Keep ripgrep output lines (``number:text``), parsed later by :meth:`lines`."""
        self._raw.extend(lines)
        self.kept += len(lines)

    def lines(self) -> list[tuple[int, str]]:
        """The kept lines as (line number, clipped text)."""
        if self._raw:
            self._parsed.extend(filter(None, map(_parse_output_line, self._raw)))
            self._raw.clear()
        return self._parsed


def _modified(path: Path) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


class MatchCollector:
    """Gathers matching lines per file, keeping at most :data:`MAX_MATCHES` per file.

    No file can contribute more than the overall cap, so the rest only needs counting.
    """

    def __init__(self, accepts: Callable[[Path], bool]) -> None:
        self.accepts = accepts
        self.files: dict[Path, FileMatches] = {}
        self.total = 0
        self.partly_searched = 0
        """Lines the fallback searched only the start of (see :data:`MAX_FALLBACK_LINE_CHARS`)."""

    def add(self, path: Path, line_number: int, text: str) -> None:
        """Record one matching line of ``path`` (unless the include filter rejects the file)."""
        matches = self.file(path)
        if matches is None:
            return
        self.total += 1
        if matches.kept < MAX_MATCHES:
            matches.add(line_number, text)

    def newest_first(self) -> list[tuple[Path, float]]:
        """The files with matches and their modification times, newest first (ties by path)."""
        dated = [(path, matches.mtime) for path, matches in self.files.items() if matches.mtime is not None]
        dated.sort(key=lambda item: (-item[1], str(item[0])))
        return dated

    def file(self, path: Path) -> FileMatches | None:
        """Where ``path``'s matches go, or None when they are not wanted (filtered or withheld)."""
        matches = self.files.get(path)
        if matches is None:
            if not self.accepts(path):
                return None
            # Taken now, while ripgrep is still searching, rather than after it finished.
            matches = self.files[path] = FileMatches(_modified(path))
        return matches


class GrepTool(Tool[GrepParams]):
    """Searches file contents for a regex or exact text; matches grouped by file, newest file first.

    Args:
        rg_path: The ``rg`` binary to search with; :attr:`RipgrepLookup.AUTO` (the default) looks
            for one, None forces the pure-Python fallback.

    """

    name = "grep"
    params_model = GrepParams

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
            "files": len(collector.files),
            "truncated": collector.total > MAX_MATCHES,
            "backend": "python" if self.rg_path is None else "ripgrep",
            "withheld": visible.withheld,
        }
        note = "\n".join(filter(None, [_partly_searched_note(collector.partly_searched), visible.note()]))
        if not collector.total:
            message = f"No matches found for {params.pattern!r} in {describe_location(shown_as)}."
            return ToolResult(content=f"{message}\n{note}" if note else message, metadata=metadata)
        dated = collector.newest_first()
        # Where the first matches are, for callers that rank them (the small-model harness), file by
        # file in path order: which files are newest must not change which matches it ranks.
        by_path = sorted(dated, key=lambda item: str(item[0]))
        metadata["hits"] = [
            [ctx.display_path(path), number] for path, number, _ in shown_matches(by_path, collector)
        ]
        # The files the result names, for a sub-agent's files_explored.
        shown = shown_matches(dated, collector)
        metadata["paths"] = [ctx.display_path(path) for path in dict.fromkeys(path for path, _, _ in shown)]
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
    """Run ``rg`` over ``target`` and feed its matches to ``collector``.

    Plain output, one block per file (``path NUL``, then ``number:text`` lines, then a blank line),
    not ``--json``: decoding a JSON record per match cost several times ripgrep's own time on a
    common pattern, and a minified line with many matches made one enormous record. Lines over
    :data:`RG_MAX_COLUMNS` bytes come as a preview.
    """
    args = [rg_path, "--no-config", "--hidden", "--no-messages", "--glob", f"!{GIT_DIR_NAME}"]
    args += ["--null", "--line-number", "--with-filename", "--heading", "--color", "never"]
    args += ["--max-columns", str(RG_MAX_COLUMNS), "--max-columns-preview"]
    if params.literal_text:
        args.append("--fixed-strings")
    if include is not None:
        args += name_type_args(basename_prefilter(include))
    args += ["--regexp", params.pattern, "--", str(target)]
    reader = _RipgrepReader(collector)
    return_code, stderr = await run_chunks(args, reader.feed)
    reader.finish()
    if return_code not in (0, 1) and not collector.total:
        error = ripgrep_error(stderr)
        if "regex" in stderr:
            raise ToolError(f"{error.message}; {_REGEX_HINT}.")
        raise error


class _RipgrepReader:
    """Reads ``rg --heading --null`` output into a collector, a chunk at a time.

    Matching lines are counted with ``bytes.count``; only a file's first :data:`MAX_MATCHES` are
    split and decoded, and each file's path is judged once. What is left over between chunks is
    at most part of one line, which ``--max-columns`` keeps short.
    """

    def __init__(self, collector: MatchCollector) -> None:
        self.collector = collector
        self.pending = b""
        self.in_header = True
        self.matches: FileMatches | None = None

    def feed(self, chunk: bytes) -> None:
        """Take the next piece of output."""
        data = self.pending + chunk if self.pending else chunk
        position = 0
        while position < len(data):
            if self.in_header:
                end = data.find(b"\0", position)
                if end < 0:
                    break
                self.matches = self.collector.file(Path(os.fsdecode(data[position:end])))
                self.in_header = False
                position = end + 1
            elif data[position] == _NEWLINE:  # the blank line after a file's block
                self.in_header = True
                position += 1
            else:
                end = data.find(b"\n\n", position)
                last = end if end >= 0 else data.rfind(b"\n", position)
                if last < 0:
                    break
                self._lines(data[position : last + 1])
                position = last + 1
        self.pending = data[position:]

    def finish(self) -> None:
        """Take what is left at the end of the output."""
        if not self.in_header and self.pending:
            self._lines(self.pending + b"\n")
        self.pending = b""

    def _lines(self, block: bytes) -> None:
        # Whole lines, each ending in a newline: "number:text", or "path: WARNING: ..." when
        # ripgrep stopped at a NUL byte after a match (paths are absolute: they start with "/").
        matches = self.matches
        if matches is None:
            return
        self.collector.total += block.count(b"\n") - block.count(b"\n/") - block.startswith(b"/")
        wanted = MAX_MATCHES - matches.kept
        if wanted > 0:
            lines = block.split(b"\n", wanted)
            matches.add_output(lines[:wanted] if len(lines) > wanted else lines[:-1])


def _parse_output_line(line: bytes) -> tuple[int, str] | None:
    number, _, text = line.partition(b":")
    if not number.isdigit():
        return None
    cut = len(text) > RG_MAX_COLUMNS
    if cut:  # a preview: the first characters, then " [... omitted end of long line]"
        text = text[: text.rfind(b" [... ")]
    return int(number), clip(text.decode("utf-8", errors="replace").removesuffix("\r"), cut=cut)


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
            if len(line) > MAX_FALLBACK_LINE_CHARS:
                collector.partly_searched += 1
                found = regex.search(line, 0, MAX_FALLBACK_LINE_CHARS)
            else:
                found = regex.search(line)
            if found:
                collector.add(path, number, line.removesuffix("\r"))


def _partly_searched_note(count: int) -> str:
    if not count:
        return ""
    lines = "1 line" if count == 1 else f"{count} lines"
    was, its = ("was", "its") if count == 1 else ("were", "their")
    return (
        f"({lines} over {MAX_FALLBACK_LINE_CHARS:,} characters {was} searched in {its} first "
        f"{MAX_FALLBACK_LINE_CHARS:,} characters only; install ripgrep (rg) to search them whole.)"
    )


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
        by_file.setdefault(path, []).append(f"  {number}: {text}")
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
        for number, text in collector.files[path].lines()[: MAX_MATCHES - len(shown)]:
            shown.append((path, number, text))
        if len(shown) >= MAX_MATCHES:
            break
    return shown


def clip(text: str, *, cut: bool = False) -> str:
    """Cut a matching line to :data:`MAX_MATCH_LINE_CHARS`, saying how long it was.

    ``cut`` says ripgrep already cut ``text``: the line was longer than that, by how much unknown.
    """
    if cut:
        return f"{text[:MAX_MATCH_LINE_CHARS]}… [line cut: over {len(text)} characters]"
    if len(text) <= MAX_MATCH_LINE_CHARS:
        return text
    return f"{text[:MAX_MATCH_LINE_CHARS]}… [line cut: {len(text)} characters]"

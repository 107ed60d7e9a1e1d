"""Which parts of the files a search hit is read from: the enclosing function, within a line budget."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from nestor.runtime.features.small.gathering.code_index import code_index
from nestor.runtime.features.small.gathering.evidence import Hit, Region
from nestor.runtime.features.small.gathering.project import project_files
from nestor.runtime.features.small.gathering.reader import ProjectReader

MAX_REGIONS = 4
MAX_FUNCTION_LINES = 40
MIN_REGION_SHARE = 0.3
"""A region is shown only if its hit scores at least this share of the best hit's score."""
TEST_PATH = re.compile(r"(?:^|/)(?:tests?|spec)(?:/|$)|(?:^|/)test_[^/]*$|_test\.\w+$|\.spec\.\w+$")
DOC_SUFFIXES = frozenset({".md", ".rst", ".txt"})


def choose_regions(
    ranked: list[Hit], reader: ProjectReader, *, max_lines: int, firsts: Sequence[Hit] = ()
) -> list[Region]:
    """Cut the best hits to the code around them, merging overlaps, within ``max_lines`` in all.

    ``firsts`` are taken before the rest, in their order (the best hit of each part of a question).
    """
    regions: list[Region] = []
    used = 0
    floor = MIN_REGION_SHARE * max((hit.score for hit in ranked), default=0.0)
    for hit in [*firsts, *ranked]:
        if len(regions) >= MAX_REGIONS or used >= max_lines or hit.score <= 0:
            break
        if hit.score < floor and hit not in firsts:
            break  # weak next to the best: noise a small model would answer from
        if any(r.path == hit.path and r.start <= hit.line <= r.end for r in regions):
            continue
        region = region_around(hit, reader)
        room = max_lines - used
        if region.size > room:
            if room < 8:
                break
            start = max(region.start, min(hit.line - 3, region.end - room + 1))
            region = Region(region.path, start, start + room - 1, region.score, region.label)
        regions.append(region)
        used += region.size
    return _merged(regions)


def region_around(hit: Hit, reader: ProjectReader) -> Region:
    """The code around ``hit``: its enclosing function (in any language with a grammar), else a window."""
    text = reader.read_text(hit.path) or ""
    total = max(1, text.count("\n") + 1)
    block = enclosing_block(text, hit.line) if hit.path.endswith(".py") else _enclosing_function(reader, hit)
    if block is not None:
        name, start, end = block
        if end - start + 1 <= MAX_FUNCTION_LINES:
            return Region(hit.path, start, end, hit.score, name)
        elided = _long_docstring(text, start) if hit.path.endswith(".py") else None
        if elided and not elided[0] <= hit.line <= elided[1]:
            whole = Region(hit.path, start, end, hit.score, name, elided)
            if whole.size <= MAX_FUNCTION_LINES:
                return whole  # its code, with the docstring cut to its first line
        if hit.line - start < MAX_FUNCTION_LINES - 10:
            return Region(hit.path, start, start + MAX_FUNCTION_LINES - 1, hit.score, name)
        return Region(hit.path, max(start, hit.line - 12), min(end, hit.line + 12), hit.score, name)
    before, after = (2, 8) if PurePosixPath(hit.path).suffix in DOC_SUFFIXES else (4, 10)
    return Region(hit.path, max(1, hit.line - before), min(total, hit.line + after), hit.score)


def _enclosing_function(reader: ProjectReader, hit: Hit) -> tuple[str, int, int] | None:
    """The innermost function around ``hit`` in a file of another language, by its grammar."""
    function = code_index(reader, [hit.path]).enclosing(hit.path, hit.line)
    if function is None:
        return None
    return f"{function.kind} {function.qualified}", function.line, function.end


def enclosing_block(text: str, line: int) -> tuple[str, int, int] | None:
    """The innermost function (or small class) around ``line``: (label, first line, last line)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    best: tuple[str, int, int] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        if not start <= line <= end:
            continue
        if isinstance(node, ast.ClassDef) and line != node.lineno and end - start + 1 > MAX_FUNCTION_LINES:
            continue  # a line in a big class body: a window around it says more than the class head
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        if best is None or start >= best[1]:
            best = (f"{kind} {node.name}", start, end)
    return best


def companion_test_regions(regions: list[Region], reader: ProjectReader) -> list[Region]:
    """The last lines of the test file of each Python source file among ``regions``, at most two."""
    shown = {region.path for region in regions}
    files = [path for path in project_files(reader.root) if path.endswith(".py")]
    found: list[Region] = []
    for region in regions:
        if TEST_PATH.search(region.path) or not region.path.endswith(".py"):
            continue
        wanted = f"test_{PurePosixPath(region.path).name}"
        for path in files:
            if PurePosixPath(path).name == wanted and path not in shown:
                total = (reader.read_text(path) or "").count("\n")
                found.append(Region(path, max(1, total - 14), max(1, total), 1.0, "end of its test file"))
                shown.add(path)
                break
    return found[:2]


def _merged(regions: list[Region]) -> list[Region]:
    """Regions of one file that overlap or touch become one; order (by score) is kept."""
    merged: list[Region] = []
    for region in regions:
        for index, other in enumerate(merged):
            if other.path == region.path and region.start <= other.end + 1 and other.start <= region.end + 1:
                merged[index] = Region(
                    other.path,
                    min(other.start, region.start),
                    max(other.end, region.end),
                    max(other.score, region.score),
                    other.label or region.label,
                    other.elided or region.elided,
                )
                break
        else:
            merged.append(region)
    return merged


@functools.lru_cache(maxsize=64)
def _docstrings(text: str) -> dict[int, tuple[int, int]]:
    """The first and last line of each function's docstring, by the function's first line."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    found: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found[start] = (first.lineno, first.end_lineno or first.lineno)
    return found


def _long_docstring(text: str, function_start: int) -> tuple[int, int] | None:
    """The lines to leave out of the docstring of the function starting at ``function_start``.

    All but its first and last line, when that is more than three lines: an explanation needs
    the code, and a long docstring would push the code out of a 40-line excerpt.
    """
    lines = _docstrings(text).get(function_start)
    if lines is None or lines[1] - lines[0] < 4:
        return None
    return lines[0] + 1, lines[1] - 1

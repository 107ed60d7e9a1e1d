"""How much the grep tool adds to ripgrep on a real tree: the installed Python's standard library.

The corpus is ``sysconfig.get_paths()["stdlib"]`` without ``site-packages`` (and ``__pycache__``),
hard-linked (or copied) into a temporary folder, so what is installed does not change it.

For each pattern, side by side in the same run: (a) ``rg`` itself, its whole output read from a
pipe and thrown away (the floor: what any wrapper has to wait for), and (b) the grep tool's
``run`` on the same tree (ripgrep plus reading, filtering, sorting and rendering its matches).
Each is run once to warm the page cache, then timed five times, interleaved so both see the same
machine load; the median counts. The target is (b) at most 1.5 times (a) on common patterns. The
tool's answer is checked against rg's match count, so a fast wrong answer cannot pass.

Also timed once each: a 2 MB minified line with half a million matches (rg's floor and the tool),
which took seconds and hundreds of MB when the tool read ``rg --json``.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path

from nestor.tools._search import find_ripgrep
from nestor.tools.base import ToolContext
from nestor.tools.grep import GrepParams, GrepTool

PATTERNS = ("self", "import", "def ", "return None", r"class \w+Error")
TARGET_RATIO = 1.5
REPEATS = 5


def _rg_floor(rg: str, pattern: str, root: Path) -> tuple[float, int]:
    args = [rg, "--no-config", "--hidden", "--no-messages", "--glob", "!.git", "--null", "-n", "-H"]
    started = time.perf_counter()
    output = subprocess.run(
        [*args, "--regexp", pattern, "--", str(root)], capture_output=True, check=False
    ).stdout
    return time.perf_counter() - started, output.count(b"\n")


async def _tool(tool: GrepTool, ctx: ToolContext, pattern: str) -> tuple[float, int]:
    started = time.perf_counter()
    result = await tool.run(GrepParams(pattern=pattern), ctx)
    return time.perf_counter() - started, int(result.metadata.get("matches", 0))


async def _compare(rg: str, tool: GrepTool, root: Path, files: int) -> bool:
    ctx = ToolContext(project_root=root)
    print(f"corpus: {files} files, the standard library of Python {sysconfig.get_python_version()}")
    print(f"{'pattern':<18}{'matches':>9}{'rg (ms)':>10}{'tool (ms)':>11}{'ratio':>8}")
    worst = 0.0
    for pattern in PATTERNS:
        _rg_floor(rg, pattern, root)
        await _tool(tool, ctx, pattern)
        floor: list[float] = []
        ours: list[float] = []
        counts: set[tuple[int, int]] = set()
        for _ in range(REPEATS):
            rg_s, rg_count = _rg_floor(rg, pattern, root)
            tool_s, tool_count = await _tool(tool, ctx, pattern)
            floor.append(rg_s)
            ours.append(tool_s)
            counts.add((rg_count, tool_count))
        (rg_count, tool_count), *_ = counts
        if len(counts) != 1 or rg_count != tool_count:
            print(f"{pattern!r:<18} MISMATCH: rg found {rg_count}, the tool {tool_count}")
            return False
        ratio = statistics.median(ours) / statistics.median(floor)
        worst = max(worst, ratio)
        print(
            f"{pattern!r:<18}{rg_count:>9}{statistics.median(floor) * 1000:>10.0f}"
            f"{statistics.median(ours) * 1000:>11.0f}{ratio:>7.2f}x"
        )
    verdict = "meets" if worst <= TARGET_RATIO else "MISSES"
    print(f"worst ratio {worst:.2f}x: {verdict} the {TARGET_RATIO}x target")
    return worst <= TARGET_RATIO


async def _long_line(rg: str, tool: GrepTool) -> None:
    with tempfile.TemporaryDirectory(prefix="nestor-bench-grep-") as folder:
        root = Path(folder)
        (root / "bundle.min.js").write_text("var a=1;" * 262_144)  # 2 MB, one line
        rg_s, _ = _rg_floor(rg, "a", root)
        tool_s, matches = await _tool(tool, ToolContext(project_root=root), "a")
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"2 MB one-line file: rg {rg_s * 1000:.0f} ms, tool {tool_s * 1000:.0f} ms "
            f"({matches} matching line); this process's peak RSS so far {peak_mb:.0f} MB"
        )


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def main() -> None:
    """Print the side-by-side table and the long-line figures."""
    print("grep tool vs ripgrep")
    rg = find_ripgrep()
    if rg is None:
        print("skipped: no rg binary")
        return
    tool = GrepTool(rg_path=rg)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    with tempfile.TemporaryDirectory(prefix="nestor-bench-stdlib-") as folder:
        corpus = Path(folder) / "stdlib"
        ignored = shutil.ignore_patterns("site-packages", "__pycache__")
        shutil.copytree(stdlib, corpus, symlinks=True, ignore=ignored, copy_function=_link_or_copy)
        files = sum(1 for path in corpus.rglob("*") if path.is_file())
        asyncio.run(_compare(rg, tool, corpus, files))
    asyncio.run(_long_line(rg, tool))


if __name__ == "__main__":
    main()

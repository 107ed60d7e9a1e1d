"""How much the grep tool adds to ripgrep on a real tree: the installed Python's standard library.

The corpus is ``sysconfig.get_paths()["stdlib"]`` without ``site-packages`` (and ``__pycache__``),
hard-linked (or copied) into a temporary folder, so what is installed does not change it.

For each pattern, side by side in the same run: (a) ``rg`` itself, its whole output read from a
pipe and thrown away (the floor: what any wrapper has to wait for), and (b) the grep tool's
``run`` on the same tree (ripgrep plus reading, filtering, sorting and rendering its matches),
and (c) the same with one deny rule, which every file found is judged against as in a session
(the tool's requests carry resolved paths, which the rules take as they are).
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

from nestor.permissions import PermissionPolicy
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
    plain = ToolContext(project_root=root)
    # A session's rules: every file found is judged against them (here one deny rule).
    policy = PermissionPolicy.from_config([], [], ["view(.env)"], project_root=str(root))
    ruled = ToolContext(project_root=root, withholds=policy.withholds)
    print(f"corpus: {files} files, the standard library of Python {sysconfig.get_python_version()}")
    print(f"{'pattern':<18}{'matches':>9}{'rg (ms)':>9}{'tool':>7}{'ratio':>7}{'+rule':>7}{'ratio':>7}")
    worst = worst_ruled = 0.0
    for pattern in PATTERNS:
        _rg_floor(rg, pattern, root)
        await _tool(tool, plain, pattern)
        times: dict[str, list[float]] = {"rg": [], "tool": [], "ruled": []}
        counts: set[tuple[int, int, int]] = set()
        for _ in range(REPEATS):
            rg_s, rg_count = _rg_floor(rg, pattern, root)
            tool_s, tool_count = await _tool(tool, plain, pattern)
            ruled_s, ruled_count = await _tool(tool, ruled, pattern)
            times["rg"].append(rg_s)
            times["tool"].append(tool_s)
            times["ruled"].append(ruled_s)
            counts.add((rg_count, tool_count, ruled_count))
        (rg_count, tool_count, ruled_count), *_ = counts
        if len(counts) != 1 or not rg_count == tool_count == ruled_count:
            print(f"{pattern!r:<18} MISMATCH: rg found {rg_count}, the tool {tool_count} and {ruled_count}")
            return False
        floor, ours, ours_ruled = (statistics.median(times[key]) for key in ("rg", "tool", "ruled"))
        worst = max(worst, ours / floor)
        worst_ruled = max(worst_ruled, ours_ruled / floor)
        print(
            f"{pattern!r:<18}{rg_count:>9}{floor * 1000:>9.0f}{ours * 1000:>7.0f}{ours / floor:>6.2f}x"
            f"{ours_ruled * 1000:>7.0f}{ours_ruled / floor:>6.2f}x"
        )
    verdict = "meets" if worst <= TARGET_RATIO else "MISSES"
    print(
        f"worst ratio {worst:.2f}x without rules ({worst_ruled:.2f}x with one): "
        f"{verdict} the {TARGET_RATIO}x target"
    )
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

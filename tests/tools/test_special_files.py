"""FIFOs and devices in a project: every file tool answers at once with a clear line.

A regression would block a thread forever (opening a FIFO waits for the other end), so each call
is bounded, and the FIFO fixture opens the other end on teardown to let a stuck thread go.
"""

import asyncio
import contextlib
import os
import resource
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import pytest

from nestor.core.errors import ToolError
from nestor.tools._search import RipgrepLookup
from nestor.tools.base import ToolContext
from nestor.tools.edit import EditParams, EditTool
from nestor.tools.glob import GlobParams, GlobTool
from nestor.tools.grep import GrepParams, GrepTool
from nestor.tools.ls import LsParams, LsTool
from nestor.tools.view import ViewParams, ViewTool
from nestor.tools.write import WriteParams, WriteTool

BOUND_S = 30.0
"""Generous: the fixed tools answer in milliseconds; this only turns a hang into a failure."""

BACKENDS = {"ripgrep": RipgrepLookup.AUTO, "python": None}
T = TypeVar("T")


async def promptly(awaitable: Awaitable[T], fifo: Path) -> T:
    """Await within :data:`BOUND_S`; past it, free the thread stuck on ``fifo`` and fail."""
    try:
        return await asyncio.wait_for(awaitable, BOUND_S)
    except TimeoutError:
        threading.Thread(target=_keep_releasing, args=(fifo,), daemon=True).start()
        pytest.fail(f"the tool was still busy with {fifo.name} after {BOUND_S:g} s")


def _keep_releasing(fifo: Path) -> None:
    # A thread blocked opening the FIFO goes on once the other end opens; it may block again on its
    # next open, so keep opening both ends for a while. The event loop waits for its threads when
    # it closes: without this the suite would hang instead of failing.
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, flags))
        time.sleep(0.01)


@pytest.fixture
def fifo(ctx: ToolContext) -> Path:
    path = ctx.project_root / "pipe.txt"
    os.mkfifo(path)
    return path


async def test_view_refuses_a_fifo(ctx: ToolContext, fifo: Path) -> None:
    with pytest.raises(ToolError, match=r"^pipe\.txt is a FIFO \(named pipe\), not a regular file"):
        await promptly(ViewTool().run(ViewParams(path="pipe.txt"), ctx), fifo)


async def test_edit_refuses_a_fifo(ctx: ToolContext, fifo: Path) -> None:
    with pytest.raises(ToolError, match=r"^pipe\.txt is a FIFO \(named pipe\), not a regular file"):
        await promptly(EditTool().run(EditParams(path="pipe.txt", old_string="a", new_string="b"), ctx), fifo)


async def test_write_refuses_a_fifo_and_leaves_it_alone(ctx: ToolContext, fifo: Path) -> None:
    with pytest.raises(ToolError, match=r"^Cannot write pipe\.txt: it is a FIFO \(named pipe\)"):
        await promptly(WriteTool().run(WriteParams(path="pipe.txt", content="x"), ctx), fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
async def test_grep_refuses_a_fifo_given_as_its_path(ctx: ToolContext, fifo: Path, backend: str) -> None:
    tool = GrepTool(rg_path=BACKENDS[backend])
    with pytest.raises(
        ToolError, match=r"^pipe\.txt is a FIFO \(named pipe\), not a regular file; grep searches"
    ):
        await promptly(tool.run(GrepParams(pattern="x", path="pipe.txt"), ctx), fifo)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
async def test_grep_and_glob_skip_a_fifo_inside_the_tree(ctx: ToolContext, fifo: Path, backend: str) -> None:
    (ctx.project_root / "a.txt").write_text("hello\n")

    found = await promptly(GrepTool(rg_path=BACKENDS[backend]).run(GrepParams(pattern="hello"), ctx), fifo)
    listed = await promptly(GlobTool(rg_path=BACKENDS[backend]).run(GlobParams(pattern="*.txt"), ctx), fifo)

    assert found.content == "Found 1 match in 1 file.\n\na.txt:\n  1: hello"
    assert listed.content == "a.txt"


async def test_ls_and_glob_name_what_a_fifo_is(ctx: ToolContext, fifo: Path) -> None:
    with pytest.raises(ToolError, match=r"^pipe\.txt is a FIFO \(named pipe\), not a directory"):
        await promptly(LsTool().run(LsParams(path="pipe.txt"), ctx), fifo)
    with pytest.raises(ToolError, match=r"^pipe\.txt is a FIFO \(named pipe\), not a directory"):
        await promptly(GlobTool().run(GlobParams(pattern="*", path="pipe.txt"), ctx), fifo)


_DEVICE_SCRIPT = """
import asyncio, sys
from pathlib import Path
from nestor.core.errors import ToolError
from nestor.tools.base import ToolContext
from nestor.tools.edit import EditParams, EditTool
from nestor.tools.grep import GrepParams, GrepTool
from nestor.tools.view import ViewParams, ViewTool
from nestor.tools.write import WriteParams, WriteTool

async def main() -> None:
    ctx = ToolContext(project_root=Path(sys.argv[1]))
    calls = {
        "view": ViewTool().run(ViewParams(path="zero.txt"), ctx),
        "edit": EditTool().run(EditParams(path="zero.txt", old_string="a", new_string="b"), ctx),
        "write": WriteTool().run(WriteParams(path="zero.txt", content="x"), ctx),
        "grep-rg": GrepTool().run(GrepParams(pattern="x", path="zero.txt"), ctx),
        "grep-python": GrepTool(rg_path=None).run(GrepParams(pattern="x", path="zero.txt"), ctx),
    }
    for name, call in calls.items():
        try:
            result = await call
            print(f"{name}: ok: {result.content}", flush=True)
        except ToolError as error:
            print(f"{name}: error: {error}", flush=True)

asyncio.run(main())
"""


def _limit_memory() -> None:
    # Reading /dev/zero to the end would take all the memory there is; fail fast instead.
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def test_every_tool_refuses_a_symlink_to_dev_zero(ctx: ToolContext) -> None:
    (ctx.project_root / "zero.txt").symlink_to("/dev/zero")

    completed = subprocess.run(
        [sys.executable, "-c", _DEVICE_SCRIPT, str(ctx.project_root)],
        capture_output=True,
        text=True,
        timeout=BOUND_S * 2,
        preexec_fn=_limit_memory,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr[-2000:]
    lines = completed.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["view", "edit", "write", "grep-rg", "grep-python"]
    for line in lines:
        assert "is a character device, not a " in line, line
        assert ": error: " in line, line

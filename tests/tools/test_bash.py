from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pytest
from pydantic import ValidationError

from nestor.tools.base import ToolContext
from nestor.tools.bash import (
    KILL_GRACE_SECONDS,
    MAX_TIMEOUT_SECONDS,
    OUTPUT_LIMIT_CHARS,
    BashParams,
    BashTool,
    OutputBuffer,
)
from nestor.tools.catalogue import ToolCatalogue
from tests.processes import is_running


def read_pids(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [int(line) for line in path.read_text().split()]


async def wait_for_pids(path: Path, count: int) -> list[int]:
    while len(pids := read_pids(path)) < count:  # noqa: ASYNC110 - the shell writes a file, no event
        await asyncio.sleep(0.02)
    return pids


async def wait_until_gone(pids: list[int]) -> list[int]:
    """The pids still running once the group has had a second to disappear."""
    for _ in range(50):
        if not any(is_running(pid) for pid in pids):
            return []
        await asyncio.sleep(0.02)
    return [pid for pid in pids if is_running(pid)]


def kill_leftovers(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(project_root=tmp_path.resolve())


async def run(command: str, ctx: ToolContext, tool: BashTool | None = None, **params: object):
    return await (tool or BashTool()).run(BashParams.model_validate({"command": command, **params}), ctx)


# This command records the shell's pid and two children's pids, then waits on the children.
SPAWN_CHILDREN = (
    "echo $$ >> pids; sleep 300 & echo $! >> pids; sleep 300 & echo $! >> pids; echo started; wait"
)


async def test_returns_output_of_a_successful_command(ctx: ToolContext) -> None:
    result = await run("echo hello; echo world", ctx)

    assert result.content == "hello\nworld"
    assert not result.is_error
    assert result.metadata["exit_code"] == 0
    assert "Exit code" not in result.content


async def test_non_zero_exit_shows_output_and_code_without_being_an_error(ctx: ToolContext) -> None:
    result = await run("echo partial; exit 3", ctx)

    assert not result.is_error
    assert result.content == "partial\n\nExit code: 3"
    assert result.metadata["exit_code"] == 3


async def test_stderr_is_merged_into_the_output_in_order(ctx: ToolContext) -> None:
    result = await run("echo out1; echo err1 >&2; echo out2; echo err2 >&2", ctx)

    assert result.content == "out1\nerr1\nout2\nerr2"


async def test_empty_output_says_so(ctx: ToolContext) -> None:
    result = await run("true", ctx)

    assert result.content == "(no output)"


async def test_runs_in_the_project_root(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("here")

    result = await run("pwd -P; cat marker.txt", ctx)

    assert result.content == f"{ctx.project_root}\nhere"


async def test_stdin_is_empty_so_reads_do_not_wait(ctx: ToolContext) -> None:
    result = await run('read -r line; echo "got:[$line] status:$?"', ctx)

    assert result.content == "got:[] status:1"


async def test_sets_the_non_interactive_environment_and_inherits_the_rest(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NESTOR_TEST_INHERITED", "inherited")
    monkeypatch.setenv("PAGER", "less")

    result = await run(
        'echo "$NESTOR|$GIT_TERMINAL_PROMPT|$PAGER|$GIT_PAGER|$TERM|$NESTOR_TEST_INHERITED"', ctx
    )

    assert result.content == "1|0|cat|cat|dumb|inherited"


async def test_timeout_stops_the_whole_process_group(ctx: ToolContext, tmp_path: Path) -> None:
    result = await run(SPAWN_CHILDREN, ctx, timeout=1)
    pids = read_pids(tmp_path / "pids")
    try:
        assert len(pids) == 3
        assert result.is_error
        assert result.metadata["timed_out"] is True
        assert "timed out after 1 s" in result.content
        assert "started" in result.content
        assert await wait_until_gone(pids) == []
    finally:
        kill_leftovers(pids)


async def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(ctx: ToolContext, tmp_path: Path) -> None:
    # Ignored signals stay ignored across exec, so the children ignore SIGTERM as well.
    command = "trap '' TERM; " + SPAWN_CHILDREN
    result = await run(command, ctx, tool=BashTool(kill_grace_seconds=0.5), timeout=1)
    pids = read_pids(tmp_path / "pids")
    try:
        assert len(pids) == 3
        assert result.metadata["timed_out"] is True
        assert await wait_until_gone(pids) == []
    finally:
        kill_leftovers(pids)


async def test_timeout_applies_after_the_command_closes_its_output(ctx: ToolContext, tmp_path: Path) -> None:
    result = await run("echo before; exec >&- 2>&-; echo $$ > pids; sleep 300", ctx, timeout=1)
    pids = read_pids(tmp_path / "pids")
    try:
        assert result.metadata["timed_out"] is True
        assert "before" in result.content
        assert await wait_until_gone(pids) == []
    finally:
        kill_leftovers(pids)


async def test_cancellation_stops_the_whole_group_and_reraises(ctx: ToolContext, tmp_path: Path) -> None:
    task = asyncio.create_task(run(SPAWN_CHILDREN, ctx))
    pids = await wait_for_pids(tmp_path / "pids", 3)
    try:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await wait_until_gone(pids) == []
    finally:
        kill_leftovers(pids)


async def test_cancellation_kills_a_group_that_ignores_sigterm(ctx: ToolContext, tmp_path: Path) -> None:
    task = asyncio.create_task(run("trap '' TERM; echo $$ > pids; sleep 300 & wait", ctx))
    pids = await wait_for_pids(tmp_path / "pids", 1)
    try:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await wait_until_gone(pids) == []
    finally:
        kill_leftovers(pids)


async def test_background_job_holding_the_output_is_stopped_with_a_note(
    ctx: ToolContext, tmp_path: Path
) -> None:
    result = await run(
        "sleep 300 & echo $! > pids; echo finished", ctx, tool=BashTool(kill_grace_seconds=0.5)
    )
    pids = read_pids(tmp_path / "pids")
    try:
        assert not result.is_error
        assert result.content.startswith("finished")
        assert "background processes kept the output open" in result.content
        assert await wait_until_gone(pids) == []
    finally:
        kill_leftovers(pids)


async def test_background_job_with_redirected_output_keeps_running(ctx: ToolContext, tmp_path: Path) -> None:
    result = await run("sleep 300 > /dev/null 2>&1 & echo $! > pids; echo finished", ctx)
    pids = read_pids(tmp_path / "pids")
    try:
        assert result.content == "finished"
        assert all(is_running(pid) for pid in pids)
    finally:
        kill_leftovers(pids)


async def test_long_output_keeps_head_and_tail_with_a_marker(ctx: ToolContext) -> None:
    total = sum(len(f"{n}\n") for n in range(1, 100_001))

    result = await run("seq 1 100000", ctx)

    cut = total - OUTPUT_LIMIT_CHARS
    assert result.metadata["cut_chars"] == cut
    assert result.content.startswith("1\n2\n3\n")
    assert result.content.endswith("99999\n100000")
    assert f"[... {cut} characters cut ...]" in result.content
    assert len(result.content) < OUTPUT_LIMIT_CHARS + 100


async def test_huge_output_does_not_deadlock(ctx: ToolContext) -> None:
    result = await run("head -c 20000000 /dev/zero | tr '\\0' 'a'; echo; echo tail-end", ctx)

    assert result.content.startswith("aaaa")
    assert result.content.endswith("tail-end")
    assert result.metadata["cut_chars"] > 19_000_000


def test_output_buffer_memory_stays_bounded() -> None:
    buffer = OutputBuffer(limit=1_000)
    for index in range(10_000):
        buffer.add(f"{index:08d}\n" * 100)
        assert buffer.stored_chars <= 3 * 1_000

    assert buffer.total_chars == 10_000 * 900
    assert buffer.text().endswith("00009999\n")
    assert buffer.text().startswith("00000000\n")


def test_output_buffer_keeps_short_text_whole() -> None:
    buffer = OutputBuffer(limit=10)
    buffer.add("abc")
    buffer.add("defghij")

    assert buffer.text() == "abcdefghij"
    assert buffer.cut_chars == 0


async def test_invalid_utf8_is_replaced_not_fatal(ctx: ToolContext) -> None:
    result = await run("printf 'ok \\377\\376 ok'", ctx)

    assert result.content == "ok \ufffd\ufffd ok"


async def test_timeout_above_the_maximum_is_clamped_with_a_note(ctx: ToolContext) -> None:
    result = await run("echo quick", ctx, timeout=MAX_TIMEOUT_SECONDS * 10)

    assert result.content.startswith("quick")
    assert f"clamped to the maximum of {MAX_TIMEOUT_SECONDS} s" in result.content


def test_timeout_below_one_second_is_rejected() -> None:
    with pytest.raises(ValidationError):
        BashParams.model_validate({"command": "true", "timeout": 0})


def test_defaults() -> None:
    params = BashParams(command="ls")

    assert params.timeout == 120
    assert params.description is None
    assert KILL_GRACE_SECONDS == 2.0


def test_permission_asks_to_execute_the_command(ctx: ToolContext) -> None:
    tool = BashTool()
    request = tool.permission(BashParams(command="git status"), ctx)

    assert request is not None
    assert request.tool_name == "bash"
    assert request.action == "execute"
    assert request.target == "git status"
    assert request.description == "Run: git status"
    assert request.grant_key == "git status"
    assert not ToolCatalogue().has(tool.name, "read_only")


def test_permission_description_shows_a_shortened_first_line(ctx: ToolContext) -> None:
    command = "echo " + "x" * 200 + "\necho second"
    request = BashTool().permission(BashParams(command=command), ctx)

    assert request is not None
    assert request.target == command
    assert request.description.startswith("Run: echo xxx")
    assert request.description.endswith("…")
    assert "second" not in request.description
    assert len(request.description) <= len("Run: ") + 80


def test_description_is_read_from_the_markdown_file() -> None:
    tool = BashTool()

    assert tool.name == "bash"
    assert "bash -c" in tool.description
    assert tool.parameters_schema()["required"] == ["command"]

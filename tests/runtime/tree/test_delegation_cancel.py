"""Cancelling an agent tree stops every sub-agent and every command they run: no process outlives it."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelRequest, ToolReturnPart

from nestor.core.events import AgentFinished, Event, ToolStarted
from nestor.permissions import PermissionPolicy
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.setup import RunResult
from nestor.testing import ScriptedModel, call, reply
from tests.processes import is_running, live_group_members
from tests.runtime.tree_support import RoutedScript, TreeHarness

POLL_S = 0.02
SETTLE_S = 0.05
"""After a shell wrote its pids, time for asyncio to finish setting the process up (a few loop turns).

Cancelling before that is a different case, with its own test below.
"""
STARTUP_LIMIT_S = 10.0
"""How long commands get to start and write their pids (bounded: a broken run fails, never hangs)."""
CLEANUP_LIMIT_S = 2.0


def sleeper(directory: Path, name: str) -> dict[str, Any]:
    """A bash call whose shell writes its pid, starts a background sleep (grandchild), then sleeps."""
    shell_pid, background_pid = directory / f"{name}.pid", directory / f"{name}-bg.pid"
    command = f"echo $$ > {shell_pid}; sleep 30 & echo $! > {background_pid}; sleep 30"
    return {"command": command, "timeout": 60}


async def read_pids(directory: Path, *names: str) -> list[int]:
    """Wait (bounded) until every command wrote both of its pid files; return the pids."""
    files = [directory / f"{name}{suffix}.pid" for name in names for suffix in ("", "-bg")]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STARTUP_LIMIT_S
    while True:
        texts = [path.read_text().strip() if path.exists() else "" for path in files]
        if all(text.isdigit() for text in texts):
            return [int(text) for text in texts]
        assert loop.time() < deadline, f"the commands did not start: {texts}"
        await asyncio.sleep(POLL_S)


async def commands_running(directory: Path, *names: str) -> list[int]:
    """Wait until every command runs, and the bash tool has it in hand; return the pids."""
    pids = await read_pids(directory, *names)
    await asyncio.sleep(SETTLE_S)
    return pids


async def still_running_after_cleanup(pids: list[int]) -> list[int]:
    """The pids (and members of their process groups) still alive once the cleanup time is over."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CLEANUP_LIMIT_S

    def alive() -> list[int]:
        members = {member for pid in pids for member in live_group_members(pid)}
        return sorted({pid for pid in pids if is_running(pid)} | members)

    # Polling: nothing signals when a process outside ours ends.
    while (left := alive()) and loop.time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(POLL_S)
    return left


def live_children() -> set[int]:
    """The pids of this process's live children (a command's shell, until it ends)."""
    me = str(os.getpid())
    children: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            children.add(int(entry.name))
    return children


def yolo(root: Path) -> PermissionPolicy:
    return PermissionPolicy(project_root=str(root), yolo=True)


def finished(harness: TreeHarness, agent_id: str) -> list[AgentFinished]:
    return [e for e in harness.events if isinstance(e, AgentFinished) and e.agent_id == agent_id]


async def cancel_when_running(main: SessionAgent, run: asyncio.Task[RunResult]) -> RunResult:
    main.cancel()
    async with asyncio.timeout(STARTUP_LIMIT_S):
        return await run


async def test_cancelling_the_main_agent_stops_a_child_and_its_command(tmp_path: Path) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", {"description": "sleep", "prompt": "CHILD: sleep"}), reply("never")],
                "CHILD": [call("bash", sleeper(tmp_path, "one")), reply("never")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model, policy=yolo(tmp_path))
    run = asyncio.create_task(main.run("USER: go"))
    pids = await commands_running(tmp_path, "one")

    result = await cancel_when_running(main, run)

    assert await still_running_after_cleanup(pids) == []
    assert result.stop_reason == "cancelled"
    [child] = harness.sessions.children(main.session_id)
    assert child.status == "cancelled"
    assert [e.stop_reason for e in finished(harness, child.id)] == ["cancelled"]
    assert harness.sessions.get(main.session_id).status == "cancelled"
    assert child.id not in harness.tree.live


async def test_cancelling_the_parent_stops_a_background_child_and_its_command(tmp_path: Path) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call(
                        "task",
                        {"description": "sleep", "prompt": "CHILD: sleep", "run_in_background": True},
                    ),
                    reply("still thinking", delay=30),
                ],
                "CHILD": [call("bash", sleeper(tmp_path, "bg")), reply("never")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model, policy=yolo(tmp_path))
    run = asyncio.create_task(main.run("USER: go"))
    pids = await commands_running(tmp_path, "bg")
    [child] = harness.sessions.children(main.session_id)
    assert harness.tree.background.running(child.id)

    result = await cancel_when_running(main, run)
    async with asyncio.timeout(STARTUP_LIMIT_S):
        await harness.tree.background.wait_all()

    assert await still_running_after_cleanup(pids) == []
    assert result.stop_reason == "cancelled"
    record = harness.tree.background.get(child.id)
    assert record.status == "cancelled"
    assert harness.sessions.get(child.id).status == "cancelled"
    assert [e.stop_reason for e in finished(harness, child.id)] == ["cancelled"]
    notices = [e for e in harness.events if e.type == "background_notice"]
    assert [(e.child_id, e.status) for e in notices] == [(child.id, "cancelled")]


async def test_cancelling_the_parent_stops_parallel_children_and_all_their_commands(tmp_path: Path) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", {"description": "first", "prompt": "FIRST: sleep"})
                    + call("task", {"description": "second", "prompt": "SECOND: sleep"}),
                    reply("never"),
                ],
                "FIRST": [call("bash", sleeper(tmp_path, "first")), reply("never")],
                "SECOND": [call("bash", sleeper(tmp_path, "second")), reply("never")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model, policy=yolo(tmp_path))
    run = asyncio.create_task(main.run("USER: go"))
    pids = await commands_running(tmp_path, "first", "second")

    result = await cancel_when_running(main, run)

    assert await still_running_after_cleanup(pids) == []
    assert result.stop_reason == "cancelled"
    children = harness.sessions.children(main.session_id)
    assert sorted(child.title for child in children) == ["first", "second"]
    for child in children:
        assert child.status == "cancelled"
        assert [e.stop_reason for e in finished(harness, child.id)] == ["cancelled"]
    task_results = [
        part
        for message in main.history
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "task" and part.outcome == "interrupted"
    ]
    assert len(task_results) == 2  # both task calls are recorded as interrupted, none left unanswered


async def test_a_task_timeout_during_a_command_stops_it_and_still_reports(tmp_path: Path) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", {"description": "sleep", "prompt": "CHILD: sleep", "timeout": 0.3}),
                    reply("main done"),
                ],
                "CHILD": [
                    call("bash", sleeper(tmp_path, "slow")),
                    reply("partial: the command was too slow"),
                ],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model, policy=yolo(tmp_path))

    async with asyncio.timeout(STARTUP_LIMIT_S):
        result = await main.run("USER: go")

    pids = await read_pids(tmp_path, "slow")
    assert await still_running_after_cleanup(pids) == []
    assert result.stop_reason == "completed" and result.text == "main done"
    [child] = harness.sessions.children(main.session_id)
    assert child.status == "timeout"
    [part] = [
        part
        for message in main.history
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "task"
    ]
    assert part.metadata["subagent"]["stop_reason"] == "timeout"
    assert "partial: the command was too slow" in str(part.content)
    child_messages = harness.messages.list(child.id)
    interrupted = [
        p
        for message in child_messages
        if isinstance(message, ModelRequest)
        for p in message.parts
        if isinstance(p, ToolReturnPart) and p.outcome == "interrupted"
    ]
    assert [p.tool_name for p in interrupted] == ["bash"]


async def test_cancelling_while_a_command_is_being_started_stops_what_its_shell_started(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", {"description": "sleep", "prompt": "CHILD: sleep"}), reply("never")],
                "CHILD": [call("bash", sleeper(tmp_path, "early")), reply("never")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model, policy=yolo(tmp_path))
    loop = asyncio.get_running_loop()
    files = [tmp_path / "early.pid", tmp_path / "early-bg.pid"]
    deadline = time.monotonic() + STARTUP_LIMIT_S
    cancelled: list[bool] = []

    def cancel_as_soon_as_the_shell_runs(before: set[int]) -> None:
        # Checked at every turn of the loop: once the shell is forked, let it start its jobs and
        # cancel at once, before asyncio gets another turn to finish setting the process up.
        # That is the moment a user's Ctrl-C may land.
        if not live_children() - before and time.monotonic() < deadline:
            loop.call_soon(cancel_as_soon_as_the_shell_runs, before)
            return
        while not all(path.exists() and path.read_text().strip().isdigit() for path in files):
            if time.monotonic() > deadline:
                break
            time.sleep(0.002)
        cancelled.append(True)
        main.cancel()

    def on_event(event: Event) -> None:
        if isinstance(event, ToolStarted) and event.tool_name == "bash":
            loop.call_soon(cancel_as_soon_as_the_shell_runs, live_children())

    harness.bus.subscribe(on_event)

    async with asyncio.timeout(STARTUP_LIMIT_S):
        result = await main.run("USER: go")

    assert cancelled == [True]
    pids = await read_pids(tmp_path, "early")
    assert await still_running_after_cleanup(pids) == []
    assert result.stop_reason == "cancelled"
    [child] = harness.sessions.children(main.session_id)
    assert child.status == "cancelled"

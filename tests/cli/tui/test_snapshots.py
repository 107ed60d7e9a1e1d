"""The TUI's main screens against committed SVG snapshots (pytest-textual-snapshot's SVG format).

The app runs for real (a scripted loopback model, a real store); its clock is fixed and what the
runtime measures itself (ids, durations, the project's path) is made steady (``support.steady``),
so a screen draws the same on every run. ``pytest --snapshot-update`` rewrites the snapshots after
an intended change of the screens; look at them (they open in a browser) before committing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_textual_snapshot import SVGImageExtension
from syrupy.assertion import SnapshotAssertion

from nestor.cli.tui.panes import AgentTreePanel
from nestor.testing import ServerReply, ServerToolCall
from tests.cli.tui.support import running_tui, steady, task_call, three_explorers
from tests.server_routes import Route, router

ANSWER = "All three were **found**:\n\n```python\nfrom src import alpha, beta, gamma\n```\n"


def fixed_clock() -> float:
    return 1_000.0


@pytest.fixture
def svg(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(SVGImageExtension)


async def test_the_main_screen_after_three_explore_agents(tmp_path: Path, svg: SnapshotAssertion) -> None:
    async with running_tui(
        tmp_path, router(three_explorers(ANSWER)), size=(110, 32), clock=fixed_clock
    ) as running:
        tui = running.tui
        await running.send("USER: where are alpha, beta and gamma?")
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        await steady(running)
        assert svg == tui.export_screenshot()


async def test_a_sub_agents_transcript_at_80_by_24_in_the_light_theme(
    tmp_path: Path, svg: SnapshotAssertion
) -> None:
    async with running_tui(
        tmp_path, router(three_explorers(ANSWER)), size=(80, 24), clock=fixed_clock
    ) as running:
        tui = running.tui
        await running.send("USER: where are alpha, beta and gamma?")
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")
        await running.pilot.press("ctrl+t")
        panel = tui.query_one(AgentTreePanel)
        panel.focus()
        beta = next(a for a in tui.live_tree.agents.values() if a.description == "find beta")
        await running.until(lambda: beta.agent_id in panel.agent_ids)
        panel.highlight(beta.agent_id)
        await running.pilot.press("enter")
        await running.until(lambda: tui.shown_agent_id == beta.agent_id)
        await steady(running)
        assert tui.theme == "textual-light"
        assert svg == tui.export_screenshot()


async def test_the_permission_dialog_of_a_general_sub_agent(tmp_path: Path, svg: SnapshotAssertion) -> None:
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(task_call("build it", "BUILD: run the build"),)),
            ServerReply(text="The build was not run."),
        ],
        "BUILD": [
            ServerReply(tool_calls=(ServerToolCall("bash", {"command": "make build"}),)),
            ServerReply(text="I was not allowed to build."),
        ],
    }
    async with running_tui(tmp_path, router(routes), size=(80, 24), clock=fixed_clock) as running:
        tui = running.tui
        await running.send("USER: build it")
        await running.question()
        await steady(running)
        assert svg == tui.export_screenshot()
        await running.pilot.press("n")
        await running.until(lambda: tui.live_tree.agents[tui.live_tree.main_id].state == "done")

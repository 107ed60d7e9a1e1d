"""The agent factory: the main agent and its sub-agents built one way, from their specs."""

from __future__ import annotations

from pathlib import Path

from nestor.agents.spec import AgentSpec
from nestor.config.sections import AgentsConfig
from nestor.runtime.features.compaction import Compaction
from nestor.runtime.features.large_results import LargeResultHook
from nestor.runtime.tree.subagent_hooks import TimeoutReportHook
from nestor.testing import ScriptedModel, call, reply
from tests.runtime.tree_support import RoutedScript, TreeHarness, built, children_started

SPEC = AgentSpec(
    name="coder", description="a main agent", prompt="MAIN-PROMPT", tools=("view", "grep", "task")
)


async def test_the_main_agent_is_built_from_its_spec_and_its_sub_agents_by_the_same_factory(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call(
                        "task", {"description": "look", "prompt": "look around", "subagent_type": "explore"}
                    ),
                    reply("done"),
                ],
                "look around": [reply("found it")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={"small": model})
    session = harness.sessions.create(str(tmp_path), agent_name="coder", model="test:large")
    children = children_started(harness, session.id)

    main = await harness.factory.main(session, built(model, "test:large"), spec=SPEC)
    result = await main.run("USER")

    assert result.text == "done"
    assert main.tool_names == ["view", "grep", "task"]
    assert main.setup.system_prompt.startswith("MAIN-PROMPT")
    assert (main.setup.depth, main.setup.agent_type) == (0, "coder")
    (child,) = children
    assert (child.setup.depth, child.setup.agent_type, child.setup.parent_id) == (1, "explore", session.id)
    assert child.tool_names == ["view", "grep"]  # explore's tools within the main agent's
    for agent in (main, child):
        hooks = agent.setup.hooks
        assert sum(isinstance(hook, LargeResultHook) for hook in hooks) == 1
        assert sum(isinstance(hook, TimeoutReportHook) for hook in hooks) == 1
        # Both compact with the main agent's model.
        assert isinstance(agent.setup.compactor, Compaction)
        assert agent.setup.compactor.summarizer is not None
        assert agent.setup.compactor.summarizer.name == "test:large"
    assert child.setup.tree_budget is main.setup.tree_budget is not None


async def test_the_main_agent_gets_no_delegation_tool_when_max_depth_allows_none(tmp_path: Path) -> None:
    model = ScriptedModel([reply("ok")])
    harness = TreeHarness(tmp_path, models={}, config=AgentsConfig(max_depth=0))
    session = harness.sessions.create(str(tmp_path), agent_name="coder", model="test:large")

    main = await harness.factory.main(session, built(model, "test:large"), spec=SPEC)

    assert main.tool_names == ["view", "grep"]

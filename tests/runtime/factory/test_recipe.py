"""The agent recipe: every hook, tool, model and budget of the main agent and of a child, in one place."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nestor.agents.registry import builtin_spec
from nestor.agents.spec import AgentSpec
from nestor.config.sections import AgentsConfig
from nestor.runtime.factory.recipe import main_tool_names
from nestor.runtime.features.large_results import LargeResultHook
from nestor.runtime.kernel.hooks import BudgetHook, Budgets, LoopGuardHook
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.tree.services import TaskRequest
from nestor.runtime.tree.subagent_hooks import (
    MAIN_AGENT_REPORT,
    DelegationGuardHook,
    SearchBudgetHook,
    SubAgentSafetyHook,
    TimeoutReportHook,
)
from nestor.runtime.tree.subagent_result import ToolTracker
from nestor.runtime.tree.tree_usage import TreeCostHook
from nestor.testing import ScriptedModel, call, reply
from nestor.tools.catalogue import ToolCatalogue
from tests.runtime.tree_support import RoutedScript, TreeHarness, built, children_started

MAIN = AgentSpec(name="coder", description="a main agent", prompt="MAIN", tools=("view", "grep", "task"))
TASK = {"description": "look", "prompt": "look around", "subagent_type": "general"}


def delegating_model() -> ScriptedModel:
    return ScriptedModel(
        RoutedScript({"USER": [call("task", TASK), reply("done")], "look around": [reply("ok")]})
    )


async def run_main_and_child(harness: TreeHarness, model: ScriptedModel) -> tuple[SessionAgent, SessionAgent]:
    session = harness.sessions.create(str(harness.root), agent_name="coder", model="test:large")
    children = children_started(harness, session.id)
    main = await harness.factory.main(
        session, replace(built(model, "test:large"), context_window=50_000), spec=MAIN
    )
    assert (await main.run("USER")).text == "done"
    (child,) = children
    return main, child


async def test_the_main_agent_and_a_child_get_every_hook_from_the_recipe_the_budget_hook_first(
    tmp_path: Path,
) -> None:
    harness = TreeHarness(tmp_path, models={}, config=AgentsConfig(max_depth=2, max_cost_usd=5))

    main, child = await run_main_and_child(harness, delegating_model())

    assert [type(hook) for hook in main.setup.hooks] == [
        BudgetHook,
        LoopGuardHook,
        LargeResultHook,
        TimeoutReportHook,
        TreeCostHook,
        DelegationGuardHook,
    ]
    report = main.setup.hooks[3]
    assert isinstance(report, TimeoutReportHook) and report.prompt == MAIN_AGENT_REPORT
    assert [type(hook) for hook in child.setup.hooks] == [
        BudgetHook,
        LoopGuardHook,
        ToolTracker,
        SubAgentSafetyHook,
        SearchBudgetHook,
        TimeoutReportHook,
        LargeResultHook,
        TreeCostHook,
        DelegationGuardHook,  # depth 1 of 2: it may delegate
    ]
    child_budget = child.setup.hooks[0]
    assert isinstance(child_budget, BudgetHook)
    assert child_budget.budgets == child.setup.budgets  # the task's, set for its run
    assert child_budget.tree is main.setup.tree_budget


async def test_a_child_that_names_no_model_shares_its_parents_built_model_not_a_guess(tmp_path: Path) -> None:
    harness = TreeHarness(tmp_path, models={})

    main, child = await run_main_and_child(harness, delegating_model())

    assert child.setup.built is main.setup.built
    assert child.setup.context is not None and child.setup.context.context_window == 50_000


async def test_a_childs_plan_takes_its_budgets_from_the_call_then_the_spec_then_the_config(
    tmp_path: Path,
) -> None:
    harness = TreeHarness(tmp_path, models={}, config=AgentsConfig(max_turns=9, timeout_s=90))
    main = harness.main(ScriptedModel([reply("unused")]))
    spec = harness.registry.get("general")
    recipe = harness.factory.recipe

    from_call = await recipe.plan(spec, main, TaskRequest("d", "p", max_turns=3, max_time_s=7))
    from_config = await recipe.plan(
        replace(spec, max_turns=None, max_time_s=None), main, TaskRequest("d", "p")
    )
    from_spec = await recipe.plan(replace(spec, max_turns=4, max_time_s=40), main, TaskRequest("d", "p"))

    assert from_call.budgets == Budgets(max_iterations=3, max_time_s=7.0)
    assert from_spec.budgets == Budgets(max_iterations=4, max_time_s=40.0)
    assert from_config.budgets == Budgets(max_iterations=9, max_time_s=90.0)
    assert list(from_call.tool_names) == [
        "view",
        "ls",
        "glob",
        "grep",
        "bash",
    ]  # explore's within the parent's
    assert from_call.built is main.setup.built


async def test_the_tree_asks_the_factory_for_children_through_the_child_builder_protocol_alone() -> None:
    # The tree's services hold no callable into the app: the environment and the instruction
    # files are the recipe's to read.
    from nestor.runtime.tree.services import TreeServices

    fields = set(TreeServices.__dataclass_fields__)
    assert fields == {"registry", "config", "sessions", "messages", "bus", "project_root", "builder"}


# Declared by coder.md, built only where a language server runs for the project.
CODE_INTELLIGENCE = ("definition", "references", "hover", "symbols", "diagnostics")


def test_the_main_coder_tools_per_model_size_and_delegation() -> None:
    catalogue = ToolCatalogue()
    coder, compact = builtin_spec("coder"), builtin_spec("coder-compact")
    assert main_tool_names(coder, catalogue, can_delegate=True) == [
        *("view", "ls", "glob", "grep", *CODE_INTELLIGENCE, "write", "edit", "bash", "fetch", "todo_write"),
        *("task", "task_status", "task_output", "task_cancel", "agentic_fetch"),
    ]
    assert main_tool_names(coder, catalogue, can_delegate=False) == [
        *("view", "ls", "glob", "grep", *CODE_INTELLIGENCE, "write", "edit", "bash", "fetch", "todo_write"),
    ]
    assert main_tool_names(compact, catalogue, can_delegate=True) == [
        *("view", "ls", "glob", "grep", "edit", "bash", "task"),
    ]
    assert main_tool_names(compact, catalogue, can_delegate=False) == [
        *("view", "ls", "glob", "grep", "edit", "bash"),
    ]

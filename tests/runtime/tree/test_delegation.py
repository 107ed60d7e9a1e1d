"""The task tool end to end: child sessions, parallel delegation, roll-up, guards, models, context."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart

from nestor.config.sections import AgentsConfig
from nestor.core.events import AgentFinished, AgentStarted
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.tree.model_choice import resolve_model_choice
from nestor.testing import ScriptedModel, call, reply
from nestor.tools.base import ToolError
from tests.runtime.support import BarrierTool, EchoTool
from tests.runtime.tree_support import RoutedScript, TreeHarness, usage


def task(description: str, prompt: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "prompt": prompt, **extra}


def task_results(history: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for message in history
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "task"
    ]


async def test_parallel_tasks_run_at_once_in_child_sessions_and_roll_cost_up(tmp_path: Path) -> None:
    barrier = BarrierTool(parties=3)
    routes: dict[str, list[Any]] = {"USER": [], "find alpha": [], "find beta": [], "find gamma": []}
    for name in ("alpha", "beta", "gamma"):
        routes[f"find {name}"] = [
            call("barrier", {}, usage=usage()),
            reply(f"{name} lives in src/{name}.py:3", usage=usage()),
        ]
    routes["USER"] = [
        call("task", task("find alpha", "find alpha"), usage=usage())
        + call("task", task("find beta", "find beta"), usage=usage())
        + call("task", task("find gamma", "find gamma"), usage=usage()),
        reply("all found", usage=usage()),
    ]
    model = ScriptedModel(RoutedScript(routes))
    harness = TreeHarness(tmp_path, models={}, extra_tools={"barrier": lambda: barrier})
    main = harness.main(model, ("view", "grep", "barrier"))

    result = await main.run("USER: find the three modules")

    assert result.stop_reason == "completed" and result.text == "all found"
    assert barrier.arrived == 3  # the barrier only opens when all three children run at once
    children = harness.sessions.children(main.session_id)
    assert sorted(child.title for child in children) == ["find alpha", "find beta", "find gamma"]
    assert {child.agent_name for child in children} == {"general"}
    assert all(child.parent_tool_call_id for child in children)
    for child in children:
        assert child.usage.cost_usd == pytest.approx(0.002)
        assert child.status == "idle"
    root = harness.sessions.get(main.session_id)
    assert root.usage.cost_usd == pytest.approx(0.002 + 3 * 0.002)
    assert root.usage.requests == 2 + 3 * 2

    results = task_results(main.history)
    assert len(results) == 3
    for part in results:
        content = str(part.content)
        assert "lives in src/" in content and "[agent ses_" in content and "completed]" in content
        stored = part.metadata["subagent"]
        assert stored["success"] is True and stored["agent_type"] == "general"
        assert stored["tools_used"] == {"barrier": 1}
        assert stored["cost_usd"] == pytest.approx(0.002)
        assert stored["stop_reason"] == "completed" and stored["iterations"] == 2

    started = [e for e in harness.events if isinstance(e, AgentStarted) and e.parent_id == main.session_id]
    assert len(started) == 3 and {e.depth for e in started} == {1}
    assert {e.description for e in started} == {"find alpha", "find beta", "find gamma"}
    finished = [e for e in harness.events if isinstance(e, AgentFinished) and e.parent_id == main.session_id]
    assert {e.stop_reason for e in finished} == {"completed"}
    tool_events = [e for e in harness.events if e.type == "tool_started" and e.tool_name == "barrier"]
    assert {e.agent_id for e in tool_events} == {child.id for child in children}


async def test_a_child_starts_from_the_task_prompt_alone_with_the_preamble(tmp_path: Path) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("look around", "look around please")), reply("ok")],
                "look around": [reply("nothing here")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)
    await main.run("USER: secret context the child must not see")
    child_request = next(r for r in model.requests if "look around please" in str(r.messages[0]))
    assert "secret context" not in str(child_request.messages)
    instructions = child_request.info.instructions or ""
    assert "You are a sub-agent of nestor" in instructions
    assert "<environment>test project</environment>" in instructions
    # general inherits the parent's tools, never the delegation tools at the default max_depth
    assert sorted(child_request.tool_names) == ["bash", "glob", "grep", "ls", "view"]


async def test_unknown_agent_type_is_refused_with_the_list(tmp_path: Path) -> None:
    model = ScriptedModel([call("task", task("x", "do x", subagent_type="wizard")), reply("understood")])
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)
    await main.run("go")
    [part] = task_results(main.history)
    assert part.outcome == "denied"
    assert "wizard" in str(part.content) and "explore" in str(part.content) and "general" in str(part.content)
    assert harness.sessions.children(main.session_id) == []


async def test_empty_prompt_is_refused_before_anything_starts(tmp_path: Path) -> None:
    model = ScriptedModel([call("task", task("x", "   ")), reply("ok")])
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)
    await main.run("go")
    [part] = task_results(main.history)
    assert part.outcome == "denied" and "empty" in str(part.content)
    assert harness.sessions.children(main.session_id) == []


async def test_a_description_copied_from_the_schema_is_sent_back(tmp_path: Path) -> None:
    # Seen with the 1.5B model: the schema's own wording pasted in as the description.
    copied = "A short (3-5 word) description of the task, shown in progress"
    model = ScriptedModel([call("task", task(copied, "find the parser")), reply("ok")])
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)
    await main.run("go")
    [part] = task_results(main.history)
    assert part.outcome == "retried" and "help text" in str(part.content)
    assert harness.sessions.children(main.session_id) == []


async def test_a_child_that_answers_nothing_twice_is_an_error_result(tmp_path: Path) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("mute", "say nothing")), reply("noted")],
                "say nothing": [reply(""), reply("")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)
    await main.run("USER")
    [part] = task_results(main.history)
    # Asked twice, the child errs: the parent sees why, as for any failed child.
    assert "returned an empty reply twice" in str(part.content)
    assert "returned an empty reply twice" in part.metadata["subagent"]["error"]
    assert part.metadata["subagent"]["success"] is False
    assert part.metadata["subagent"]["stop_reason"] == "error"


async def test_explore_runs_read_only_on_the_small_model(tmp_path: Path) -> None:
    small = ScriptedModel([reply("auth is in src/auth.py:10")])
    main_model = ScriptedModel(
        [
            call("task", task("find auth", "where is auth?", subagent_type="explore", thoroughness="quick")),
            reply("k"),
        ]
    )
    harness = TreeHarness(tmp_path, models={"small": small})
    main = harness.main(main_model, ("view", "ls", "glob", "grep", "bash", "write", "edit"))
    await main.run("go")
    assert harness.built_choices == ["small"]
    [request] = small.requests
    assert sorted(request.tool_names) == ["glob", "grep", "ls", "view"]
    assert "Thoroughness: quick" in (request.info.instructions or "")
    [child] = harness.sessions.children(main.session_id)
    assert child.agent_name == "explore" and child.model == "test:small"


async def test_the_task_model_overrides_the_spec(tmp_path: Path) -> None:
    large = ScriptedModel([reply("planned")])
    main_model = ScriptedModel(
        [call("task", task("plan it", "plan", subagent_type="explore", model="sonnet")), reply("k")]
    )
    harness = TreeHarness(tmp_path, models={"large": large})
    main = harness.main(main_model)
    await main.run("go")
    assert harness.built_choices == ["large"] and len(large.requests) == 1


def test_model_choices_resolve_to_roles_or_provider_models() -> None:
    config = AgentsConfig(tiers={"fast": "openai:gpt-5-mini"})
    assert resolve_model_choice(None, config) is None
    assert resolve_model_choice("inherit", config) is None
    assert resolve_model_choice("small", config) == "small"
    assert resolve_model_choice("haiku", config) == "small"
    assert resolve_model_choice("opus", config) == "large"
    assert resolve_model_choice("fast", config) == "openai:gpt-5-mini"
    assert resolve_model_choice("powerful", config) == "large"  # a tier the config leaves out
    assert resolve_model_choice("anthropic:claude-sonnet-4-5", config) == "anthropic:claude-sonnet-4-5"
    with pytest.raises(ToolError, match="unknown model 'gpt'"):
        resolve_model_choice("gpt", config)


async def test_max_depth_two_lets_a_child_delegate_once_more(tmp_path: Path) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("level one", "level one work")), reply("top done")],
                "level one": [call("task", task("level two", "level two work")), reply("one done")],
                "level two": [reply("two done")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={}, config=AgentsConfig(max_depth=2))
    main = harness.main(model)
    await main.run("USER")
    [child] = harness.sessions.children(main.session_id)
    [grandchild] = harness.sessions.children(child.id)
    assert grandchild.title == "level two"
    level_two = next(r for r in model.requests if "level two work" in str(r.messages[0]))
    assert "task" not in level_two.tool_names  # depth 2 is the limit
    level_one = next(r for r in model.requests if "level one work" in str(r.messages[0]))
    assert "task" in level_one.tool_names


async def test_inherit_context_starts_from_the_parents_conversation(tmp_path: Path) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                # The child's conversation starts with the parent's first prompt: it takes this route too.
                "USER": [
                    call("task", task("continue", "carry on", subagent_type="forked")),
                    reply("I saw the parent's conversation"),
                    reply("k"),
                ],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    harness.write_agent(
        "forked",
        "---\ndescription: Continues with the parent's context.\ninherit_context: true\n---\nKeep going.\n",
    )
    main = harness.main(model)
    await main.run("USER: the parent's own words")
    child_request = model.requests[1]
    prompts = [
        part.content
        for message in child_request.messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart)
    ]
    assert prompts == ["USER: the parent's own words", "carry on"]
    [child] = harness.sessions.children(main.session_id)
    assert len(harness.messages.list(child.id)) == 3  # inherited prompt, task prompt, answer


async def test_a_small_model_sees_the_agents_names_and_subagent_type(tmp_path: Path) -> None:
    harness = TreeHarness(tmp_path, models={})
    model = ScriptedModel([reply("hi")])
    main = harness.main(model)
    main.setup.brief_tools = True
    brief = SessionAgent(main.session_id, main.setup)
    await brief.run("hello")
    [definition] = [d for d in model.requests[0].info.function_tools if d.name == "task"]
    description = definition.description or ""
    assert "explore" in description and "general" in description
    assert "\n" not in description
    assert set(definition.parameters_json_schema["properties"]) == {"description", "prompt", "subagent_type"}


async def test_an_agent_file_added_meanwhile_is_offered_at_the_next_run(tmp_path: Path) -> None:
    harness = TreeHarness(tmp_path, models={})
    model = ScriptedModel([reply("one"), reply("two")])
    main = harness.main(model)
    await main.run("first")
    harness.write_agent("reviewer", "---\ndescription: Reviews diffs for bugs.\n---\nReview.\n")
    await main.run("second")
    descriptions = [
        next(d.description or "" for d in request.info.function_tools if d.name == "task")
        for request in model.requests
    ]
    assert "reviewer" not in descriptions[0]
    assert "- reviewer: Reviews diffs for bugs." in descriptions[1]


async def test_a_long_inherited_conversation_is_summarised_before_the_child_starts(tmp_path: Path) -> None:
    long_text = "details " * 3000  # ~6k tokens, over half of the child's 4k budget
    model = ScriptedModel(
        RoutedScript(
            {
                "<transcript>": [reply("Summary: the user told a long story about details.")],
                # The child's conversation now starts with the summary.
                "This conversation was compacted": [reply("child done")],
                "USER": [
                    reply("I read it all.", usage=usage(input_tokens=6000, output_tokens=10)),
                    call("task", task("continue", "carry on", subagent_type="forked")),
                    reply("top done"),
                ],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    harness.write_agent(
        "forked",
        "---\ndescription: Continues.\ninherit_context: true\nmax_context_tokens: 4000\n---\nKeep going.\n",
    )
    main = harness.main(model)
    await main.run(f"USER: {long_text}")
    await main.run("USER now delegate")
    [child] = harness.sessions.children(main.session_id)
    child_request = next(r for r in model.requests if "carry on" in str(r.messages))
    sent = str(child_request.messages)
    assert "Summary: the user told a long story" in sent and long_text not in sent
    [finished] = [e for e in harness.events if isinstance(e, AgentFinished) and e.agent_id == child.id]
    assert finished.stop_reason == "completed", finished.result


class ConcurrencyProbe(EchoTool):
    """Records how many calls run at the same time."""

    name = "probe"

    def __init__(self) -> None:
        self.running = 0
        self.most = 0

    async def run(self, params: Any, ctx: Any) -> str:
        self.running += 1
        self.most = max(self.most, self.running)
        await asyncio.sleep(0.05)
        self.running -= 1
        return "probed"


async def test_parallel_tasks_beyond_max_parallel_wait_their_turn(tmp_path: Path) -> None:
    probe = ConcurrencyProbe()
    names = [f"job {i}" for i in range(5)]
    routes: dict[str, list[Any]] = {
        name: [call("probe", {"text": name}), reply(f"{name} done")] for name in names
    }
    calls = [call("task", task(name, name)) for name in names]
    first = calls[0]
    for more in calls[1:]:
        first = first + more
    routes["USER"] = [first, reply("all done")]
    model = ScriptedModel(RoutedScript(routes))
    harness = TreeHarness(
        tmp_path, models={}, config=AgentsConfig(max_parallel=2), extra_tools={"probe": lambda: probe}
    )
    main = harness.main(model, ("view", "probe"))
    result = await main.run("USER")
    assert result.text == "all done"
    assert probe.most == 2
    assert len(harness.sessions.children(main.session_id)) == 5
    assert all("done" in str(part.content) for part in task_results(main.history))


@pytest.mark.parametrize(
    ("parent_tools", "offered"), [(("view", "fetch"), ["view", "web_search"]), (("view",), ["view"])]
)
async def test_web_tools_come_to_an_agent_file_only_under_a_parent_that_can_fetch(
    tmp_path: Path, parent_tools: tuple[str, ...], offered: list[str]
) -> None:
    from nestor.tools.search_backends import RecordedBackend
    from nestor.tools.web_search import WebSearchTool

    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("look up", "look it up", subagent_type="searcher")), reply("k")],
                "look it up": [reply("found")],
            }
        )
    )
    harness = TreeHarness(
        tmp_path, models={}, extra_tools={"web_search": lambda: WebSearchTool(RecordedBackend())}
    )
    harness.write_agent("searcher", "---\ndescription: Searches.\ntools: [view, web_search]\n---\nSearch.\n")
    main = harness.main(model, parent_tools)
    await main.run("USER")
    child_request = next(r for r in model.requests if "look it up" in str(r.messages[0]))
    assert sorted(child_request.tool_names) == offered


async def test_sub_agents_get_the_project_instructions_unless_their_spec_opts_out(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Use tabs, never spaces.\n", encoding="utf-8")
    (tmp_path / "CLAUDE.md").write_text("Run tests with make check.\n", encoding="utf-8")
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", task("a", "CHILD A: work"))
                    + call("task", task("b", "CHILD B: work", subagent_type="loner")),
                    reply("done"),
                ],
                "CHILD A": [reply("a done")],
                "CHILD B": [reply("b done")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    harness.write_agent("loner", "---\ndescription: Works alone.\nproject_instructions: false\n---\nWork.\n")
    main = harness.main(model)

    await main.run("USER")

    [child_a] = [r for r in model.requests if "CHILD A" in str(r.messages[0])]
    [child_b] = [r for r in model.requests if "CHILD B" in str(r.messages[0])]
    instructions = child_a.info.instructions or ""
    assert "Use tabs, never spaces." in instructions and "Run tests with make check." in instructions
    assert f'path="{tmp_path / "AGENTS.md"}"' in instructions
    assert "Use tabs" not in (child_b.info.instructions or "")


async def test_a_sub_agent_never_reads_an_instruction_file_linked_outside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET TOKEN\n", encoding="utf-8")
    (project / "AGENTS.md").symlink_to(secret)
    model = ScriptedModel(
        RoutedScript(
            {"USER": [call("task", task("a", "CHILD: work")), reply("done")], "CHILD": [reply("ok")]}
        )
    )
    harness = TreeHarness(project, models={})
    main = harness.main(model)

    await main.run("USER")

    [child] = [r for r in model.requests if "CHILD" in str(r.messages[0])]
    assert "SECRET TOKEN" not in (child.info.instructions or "")
    assert "[not read:" in (child.info.instructions or "")

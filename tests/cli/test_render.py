"""The REPL's event renderer: Markdown blocks, tool lines, summaries, permission lines, status."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nestor.cli.render import (
    EventRenderer,
    MarkdownBlocks,
    counted,
    format_duration,
    short_args,
    turn_summary,
    usage_summary,
)
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    BackgroundNotice,
    Compacted,
    CompactionStarted,
    ErrorEvent,
    Event,
    PermissionAsked,
    PromptQueued,
    RequestFinished,
    Retrying,
    TextDelta,
    ThinkingDelta,
    TodosUpdated,
    ToolFinished,
    ToolStarted,
)
from nestor.core.permission import PermissionRequest
from nestor.core.usage import Usage
from tests.cli.delegation_support import delegated_run
from tests.cli.repl_support import lines_of, plain_console

MAIN = "ses_main"
CHILD = "ses_child42"
GRANDCHILD = "ses_grand77"


@pytest.fixture
def buffer() -> io.StringIO:
    return io.StringIO()


@pytest.fixture
def renderer(buffer: io.StringIO) -> EventRenderer:
    return EventRenderer(plain_console(buffer), main_agent_id=MAIN)


def finished(**changes: object) -> AgentFinished:
    fields: dict[str, object] = {
        "agent_id": MAIN,
        "stop_reason": "completed",
        "result": "done",
        "num_turns": 2,
        "usage": Usage(input_tokens=12_345, output_tokens=340).to_dict(),
        "cost_usd": None,
        "duration_s": 3.14,
    }
    fields.update(changes)
    return AgentFinished.model_validate(fields)


# -- MarkdownBlocks ---------------------------------------------------------------------------


def test_blocks_are_released_at_a_blank_line_only() -> None:
    blocks = MarkdownBlocks()
    assert blocks.feed("Hello **wor") is None
    assert blocks.feed("ld**.\nsame paragraph\n") is None
    assert blocks.feed("\nNext") == "Hello **world**.\nsame paragraph"
    assert blocks.pending == "Next"
    assert blocks.flush() == "Next"
    assert blocks.flush() is None


def test_blank_lines_inside_a_fence_do_not_cut_it() -> None:
    blocks = MarkdownBlocks()
    assert blocks.feed("```python\nx = 1\n\ny = 2\n") is None
    assert blocks.feed("```\n\nafter") == "```python\nx = 1\n\ny = 2\n```"
    assert blocks.flush() == "after"


def test_a_longer_fence_is_closed_only_by_as_long_a_marker() -> None:
    blocks = MarkdownBlocks()
    assert blocks.feed("~~~~\n~~~\n\nstill code\n") is None
    assert blocks.feed("~~~~\n\n") == "~~~~\n~~~\n\nstill code\n~~~~"


# -- text -------------------------------------------------------------------------------------


def test_text_is_rendered_as_markdown_block_by_block(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(AgentStarted(agent_id=MAIN))
    renderer.handle(TextDelta(agent_id=MAIN, text="Hello **wor"))
    assert buffer.getvalue() == ""
    renderer.handle(TextDelta(agent_id=MAIN, text="ld**.\n\n- one\n- tw"))
    assert "Hello world." in lines_of(buffer)
    assert "**" not in buffer.getvalue()
    renderer.handle(TextDelta(agent_id=MAIN, text="o\n"))
    renderer.handle(finished())
    text = "\n".join(lines_of(buffer))
    assert "• one" in text and "• two" in text
    assert text.index("• two") < text.index("2 turns")


def test_pending_text_is_printed_before_a_tool_line(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(TextDelta(agent_id=MAIN, text="Let me look."))
    renderer.handle(ToolStarted(agent_id=MAIN, tool_call_id="c1", tool_name="ls", args={"path": "src"}))
    lines = [line for line in lines_of(buffer) if line]
    assert lines == ["Let me look.", "● ls src"]


def test_each_model_response_is_its_own_block(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(TextDelta(agent_id=MAIN, text="first answer"))
    renderer.handle(RequestFinished(agent_id=MAIN, model="m", usage=Usage(), run_usage=Usage()))
    renderer.handle(TextDelta(agent_id=MAIN, text="second answer"))
    renderer.flush_text()
    assert [line for line in lines_of(buffer) if line] == ["first answer", "second answer"]


def test_text_of_other_agents_is_not_shown(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(TextDelta(agent_id=CHILD, text="sub-agent chatter\n\n"))
    renderer.flush_text()
    assert buffer.getvalue() == ""


def test_thinking_is_one_line_per_stretch(renderer: EventRenderer, buffer: io.StringIO) -> None:
    for piece in ("I should", " check", " the tests"):
        renderer.handle(ThinkingDelta(agent_id=MAIN, text=piece))
    renderer.handle(TextDelta(agent_id=MAIN, text="Done."))
    renderer.handle(ThinkingDelta(agent_id=MAIN, text="again"))
    assert lines_of(buffer).count("✻ thinking…") == 2
    assert "I should" not in buffer.getvalue()


# -- tools ------------------------------------------------------------------------------------


def test_tool_start_and_finish_lines(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(
        ToolStarted(agent_id=MAIN, tool_call_id="c1", tool_name="bash", args={"command": "git status"})
    )
    renderer.handle(
        ToolFinished(
            agent_id=MAIN,
            tool_call_id="c1",
            tool_name="bash",
            preview="On branch main\nnothing to commit",
            duration_s=0.31,
        )
    )
    assert lines_of(buffer) == ["● bash git status", "  ⎿ ✓ 0.3s · On branch main…"]


def test_a_failed_tool_says_so(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(ToolStarted(agent_id=MAIN, tool_call_id="c1", tool_name="view", args={"path": "a.py"}))
    renderer.handle(
        ToolFinished(
            agent_id=MAIN, tool_call_id="c1", tool_name="view", outcome="failed", preview="no such file: a.py"
        )
    )
    assert lines_of(buffer)[-1] == "  ⎿ ✗ failed 0.0s · no such file: a.py"


def test_parallel_calls_finishing_out_of_order_are_named(
    renderer: EventRenderer, buffer: io.StringIO
) -> None:
    renderer.handle(ToolStarted(agent_id=MAIN, tool_call_id="c1", tool_name="grep", args={"pattern": "TODO"}))
    renderer.handle(ToolStarted(agent_id=MAIN, tool_call_id="c2", tool_name="glob", args={"pattern": "*.py"}))
    renderer.handle(ToolFinished(agent_id=MAIN, tool_call_id="c1", tool_name="grep", preview="3 matches"))
    renderer.handle(ToolFinished(agent_id=MAIN, tool_call_id="c2", tool_name="glob", preview="a.py"))
    # The second end is not under its start either (the first end is): both are named.
    assert lines_of(buffer)[2:] == ["  ⎿ ✓ grep 0.0s · 3 matches", "  ⎿ ✓ glob 0.0s · a.py"]


def test_an_end_right_under_its_start_is_not_named(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(ToolStarted(agent_id=MAIN, tool_call_id="c1", tool_name="grep", args={"pattern": "x"}))
    renderer.handle(ToolFinished(agent_id=MAIN, tool_call_id="c1", tool_name="grep", preview="none"))
    assert lines_of(buffer) == ["● grep x", "  ⎿ ✓ 0.0s · none"]


# -- sub-agents -------------------------------------------------------------------------------


def child_started(**changes: object) -> AgentStarted:
    fields: dict[str, object] = {
        "agent_id": CHILD,
        "parent_id": MAIN,
        "depth": 1,
        "agent_type": "explore",
        "description": "find auth code",
    }
    fields.update(changes)
    return AgentStarted.model_validate(fields)


def child_finished(**changes: object) -> AgentFinished:
    fields: dict[str, object] = {
        "agent_id": CHILD,
        "parent_id": MAIN,
        "depth": 1,
        "agent_type": "explore",
        "description": "find auth code",
        "usage": Usage(input_tokens=12_000, output_tokens=400).to_dict(),
        "cost_usd": 0.004,
        "duration_s": 5.1,
    }
    fields.update(changes)
    return finished(**fields)


def test_sub_agents_print_a_done_line_but_not_their_start_tools_or_text(
    renderer: EventRenderer, buffer: io.StringIO
) -> None:
    renderer.handle(AgentStarted(agent_id=MAIN))
    task_args = {"description": "find auth code"}
    renderer.handle(ToolStarted(agent_id=MAIN, tool_call_id="t1", tool_name="task", args=task_args))
    renderer.handle(child_started())
    for index in range(3):
        call = f"c{index}"
        renderer.handle(
            ToolStarted(agent_id=CHILD, tool_call_id=call, tool_name="grep", args={"pattern": "x"})
        )
        renderer.handle(ToolFinished(agent_id=CHILD, tool_call_id=call, tool_name="grep", preview="hit"))
    renderer.handle(TextDelta(agent_id=CHILD, text="the sub-agent's report\n\n"))
    renderer.handle(ThinkingDelta(agent_id=CHILD, text="hmm"))
    renderer.handle(
        child_started(
            agent_id=GRANDCHILD, parent_id=CHILD, depth=2, agent_type="general", description="check"
        )
    )
    renderer.handle(
        child_finished(
            agent_id=GRANDCHILD,
            parent_id=CHILD,
            depth=2,
            agent_type="general",
            description="check",
            stop_reason="timeout",
            result="partial\n\n[Stopped: time limit]",
            usage=Usage(input_tokens=900, output_tokens=100).to_dict(),
            cost_usd=None,
            duration_s=2.0,
        )
    )
    renderer.handle(child_finished())
    renderer.handle(
        ToolFinished(agent_id=MAIN, tool_call_id="t1", tool_name="task", preview="in src/auth.py")
    )
    # A running sub-agent is a line of the toolbar (see the status tests), not of the scrollback.
    assert lines_of(buffer) == [
        "● task find auth code",
        "    [general] check - stopped: timeout (0 tools, 2.0s, 1.0k tok, cost unknown)",
        "  [explore] find auth code - done (3 tools, 5.1s, 12.4k tok, $0.0040)",
        # Other lines came between the task's start and its end, so the end names its tool.
        "  ⎿ ✓ task 0.0s · in src/auth.py",
    ]


def test_status_has_a_line_of_live_counters_per_running_sub_agent(renderer: EventRenderer) -> None:
    main = AgentStarted(agent_id=MAIN)
    t0 = main.timestamp
    renderer.handle(main)
    renderer.handle(ToolStarted(agent_id=MAIN, tool_call_id="t1", tool_name="task", args={}))
    renderer.handle(child_started(timestamp=t0 + 1))
    renderer.handle(ToolStarted(agent_id=CHILD, tool_call_id="c1", tool_name="grep", args={}))
    renderer.handle(ToolFinished(agent_id=CHILD, tool_call_id="c1", tool_name="grep"))
    renderer.handle(ToolStarted(agent_id=CHILD, tool_call_id="c2", tool_name="view", args={}))
    renderer.handle(
        child_started(agent_id=GRANDCHILD, parent_id=CHILD, depth=2, description="x", timestamp=t0 + 2)
    )
    # A sub-agent's tools are not the main agent's activity.
    assert renderer.main_status(now=t0 + 4) == "running task · 4.0s"
    assert renderer.status(now=t0 + 4).splitlines() == [
        "running task · 4.0s",
        "  [explore] find auth code … 2 tools, 3.0s · view",
        "    [explore] x … 0 tools, 2.0s",
    ]
    renderer.handle(child_finished(agent_id=GRANDCHILD, parent_id=CHILD, depth=2, description="x"))
    renderer.handle(finished())
    # A background sub-agent outlives the main agent's run: its line stays, alone.
    assert renderer.status(now=t0 + 5) == "  [explore] find auth code … 2 tools, 4.0s · view"
    renderer.handle(child_finished())
    assert renderer.status() == "" and renderer.agent_status() == []


def test_a_failed_sub_agent_shows_its_error_and_hint_with_its_done_line(
    renderer: EventRenderer, buffer: io.StringIO
) -> None:
    renderer.handle(child_started(agent_type="web", description="search the docs"))
    renderer.handle(ErrorEvent(agent_id=CHILD, message="no API key for openai", hint="set OPENAI_API_KEY"))
    assert lines_of(buffer) == []  # the error waits for the done line
    renderer.handle(
        child_finished(
            agent_type="web", description="search the docs", stop_reason="error", is_error=True, result="x"
        )
    )
    assert lines_of(buffer) == [
        "  [web] search the docs - failed: no API key for openai (0 tools, 5.1s, 12.4k tok, $0.0040)",
        "    hint: set OPENAI_API_KEY",
    ]


def test_a_cancelled_sub_agent_and_one_whose_start_was_missed(
    renderer: EventRenderer, buffer: io.StringIO
) -> None:
    renderer.handle(child_started())
    renderer.handle(child_finished(stop_reason="cancelled"))
    renderer.handle(child_finished(agent_id=GRANDCHILD, description="late", depth=2))
    assert lines_of(buffer) == [
        "  [explore] find auth code - cancelled (0 tools, 5.1s, 12.4k tok, $0.0040)",
        "    [explore] late - done (5.1s, 12.4k tok, $0.0040)",
    ]


def test_other_events_of_a_sub_agent_are_tagged_and_indented(
    renderer: EventRenderer, buffer: io.StringIO
) -> None:
    renderer.handle(AgentStarted(agent_id=MAIN))
    renderer.handle(child_started())
    renderer.handle(Retrying(agent_id=CHILD, attempt=1, delay_s=2.0, reason="HTTP 429"))
    renderer.handle(
        PermissionAsked(
            agent_id=CHILD,
            tool_call_id="c1",
            tool_name="bash",
            target="rm x",
            decision="deny",
            reason="read-only",
        )
    )
    assert lines_of(buffer) == [
        "  [explore hild42] ↻ retrying in 2.0s (attempt 1): HTTP 429",
        "  [explore hild42] ⊘ denied bash: rm x (read-only)",
    ]
    assert renderer.main_status(now=0).startswith("waiting for the model")  # not "retrying"


def test_background_notices_and_the_main_agents_todos(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(
        BackgroundNotice(
            agent_id=MAIN, child_id=CHILD, child_type="explore", status="completed", text="[...]"
        )
    )
    todos = [
        {"content": "Find the bug", "status": "completed"},
        {"content": "Fix it", "status": "in_progress"},
    ]
    renderer.handle(TodosUpdated(agent_id=MAIN, todos=todos))
    renderer.handle(TodosUpdated(agent_id=CHILD, todos=todos))  # a sub-agent's own list stays its own
    assert lines_of(buffer) == [
        f"⇠ background agent {CHILD} (explore) completed",
        "todos: 1/2 done",
        "  ☑ Find the bug",
        "  ◐ Fix it",
    ]


async def test_a_real_delegated_run_shows_sub_agents_by_their_done_lines(tmp_path: Path) -> None:
    buffer = io.StringIO()
    renderer = EventRenderer(plain_console(buffer))

    def handle(event: Event) -> None:
        if isinstance(event, AgentStarted) and event.depth == 0:
            renderer.main_agent_id = event.agent_id
        renderer.handle(event)

    await delegated_run(tmp_path, [handle])
    lines = lines_of(buffer)
    assert not any(line.endswith(" …") for line in lines)  # running sub-agents are the toolbar's
    done = sorted(line.split(" (")[0] for line in lines if " - done (" in line)
    assert done == ["  [explore] find auth code - done", "  [general] check the tests - done"]
    assert any(line.startswith("  [explore] find auth code - done (2 tools, ") for line in lines)
    text = "\n".join(lines)
    assert "Login is in src/auth.py; there are no tests." in text
    # The sub-agents' reports reach the user through the task results' previews, never as text of
    # the main agent's; their tool calls are counted, not printed.
    assert "login() is in src/auth.py:1" not in lines and "no tests directory" not in lines
    assert any(line.startswith("  ⎿ ✓ task ") and "login() is in src/auth.py:1" in line for line in lines)
    assert "grep" not in text and "● ls" not in text
    assert renderer.status() == ""


# -- run end ----------------------------------------------------------------------------------


def test_turn_summary_with_unknown_and_known_cost() -> None:
    assert turn_summary(finished()) == "2 turns · 12.3k in / 340 out · cost unknown · 3.1s"
    known = finished(num_turns=1, cost_usd=0.0042, duration_s=75)
    assert turn_summary(known) == "1 turn · 12.3k in / 340 out · $0.0042 · 1m15s"


def test_a_finished_run_prints_its_summary(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(finished(cost_usd=0.25))
    assert lines_of(buffer) == ["2 turns · 12.3k in / 340 out · $0.25 · 3.1s"]


def test_a_cancelled_run_says_it_was_interrupted(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(finished(stop_reason="cancelled", result="[Cancelled by the user.]"))
    assert lines_of(buffer)[0] == "⏹ interrupted; the conversation so far is kept"


def test_a_run_stopped_by_a_budget_says_why(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(finished(stop_reason="max_iterations", result="partial\n\n[Stopped after 5 requests.]"))
    assert lines_of(buffer)[0] == "■ stopped (max_iterations): Stopped after 5 requests."


def test_errors_retries_and_queued_prompts(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(Retrying(agent_id=MAIN, attempt=1, delay_s=2.0, reason="HTTP 429"))
    renderer.handle(PromptQueued(agent_id=MAIN, prompt="also fix the README\nplease"))
    renderer.handle(ErrorEvent(agent_id=MAIN, message="the provider failed", hint="try again later"))
    assert lines_of(buffer) == [
        "↻ retrying in 2.0s (attempt 1): HTTP 429",
        "↳ queued for the next turn: also fix the README…",
        "error: the provider failed",
        "hint: try again later",
    ]


# -- permissions ------------------------------------------------------------------------------

PUSH = PermissionRequest("bash", "execute", "git push", "Run: git push")


def test_permission_question_names_the_request(renderer: EventRenderer) -> None:
    question = renderer.permission_question(PUSH, MAIN)
    assert question == "Allow Run: git push? [y] once  [a] for this session  [n] deny"


def test_permission_question_from_a_sub_agent_says_which_agent_asks(renderer: EventRenderer) -> None:
    renderer.handle(AgentStarted(agent_id=CHILD, parent_id=MAIN, depth=1, agent_type="explore"))
    outside = PermissionRequest("view", "read", "/etc/hosts", "Read /etc/hosts", outside_project=True)
    question = renderer.permission_question(outside, CHILD)
    assert question == (
        "[explore hild42] wants to: Read /etc/hosts (outside the project). "
        "Allow? [y] once  [a] for this agent  [n] deny"
    )


def test_permission_answers_stay_on_screen(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.show_permission_answer(PUSH, MAIN, "once")
    renderer.show_permission_answer(PUSH, MAIN, "session")
    renderer.show_permission_answer(PUSH, CHILD, "deny")
    renderer.handle(AgentStarted(agent_id=CHILD, parent_id=MAIN, depth=1, agent_type="general"))
    renderer.show_permission_answer(PUSH, CHILD, "session")
    assert lines_of(buffer)[:3] == [
        "  ⎿ ✓ allowed once: Run: git push",
        "  ⎿ ✓ allowed for this session: Run: git push",
        "[hild42] ✗ denied: Run: git push",
    ]
    assert lines_of(buffer)[-1] == "  [general hild42] ✓ allowed for this agent's session: Run: git push"


def test_a_denial_without_a_question_is_shown(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.handle(
        PermissionAsked(
            agent_id=MAIN,
            tool_call_id="c1",
            tool_name="bash",
            target="rm -rf build",
            decision="deny",
            reason="rule deny bash(rm *)",
        )
    )
    assert lines_of(buffer) == ["  ⎿ ⊘ denied bash: rm -rf build (rule deny bash(rm *))"]


def test_a_decision_after_a_question_is_not_repeated(renderer: EventRenderer, buffer: io.StringIO) -> None:
    common = {"agent_id": MAIN, "tool_call_id": "c1", "tool_name": "bash", "target": "git push"}
    renderer.handle(PermissionAsked.model_validate(common))
    renderer.handle(PermissionAsked.model_validate({**common, "decision": "deny"}))
    assert buffer.getvalue() == ""


# -- status and small formatters --------------------------------------------------------------


def test_status_follows_the_main_agent(renderer: EventRenderer) -> None:
    assert renderer.status() == ""
    started = AgentStarted(agent_id=MAIN)
    renderer.handle(started)
    assert renderer.status(now=started.timestamp + 2) == "waiting for the model · 2.0s"
    renderer.handle(ToolStarted(agent_id=MAIN, tool_call_id="c1", tool_name="bash", args={}))
    renderer.handle(ToolStarted(agent_id=MAIN, tool_call_id="c2", tool_name="view", args={}))
    assert renderer.status(now=started.timestamp + 12).startswith("running bash, view · 12s")
    renderer.handle(ToolFinished(agent_id=MAIN, tool_call_id="c1", tool_name="bash"))
    assert renderer.status(now=started.timestamp).startswith("running view")
    renderer.handle(TextDelta(agent_id=MAIN, text="ok"))
    assert renderer.status(now=started.timestamp).startswith("writing")
    renderer.handle(finished())
    assert renderer.status() == ""


def test_startup_banner(renderer: EventRenderer, buffer: io.StringIO) -> None:
    renderer.startup(model="openai:gpt-5", session_id="ses_1", project_root="/work/p", resumed=None)
    renderer.startup(model="openai:gpt-5", session_id="ses_2", project_root="/work/p", resumed="4 messages")
    lines = lines_of(buffer)
    assert lines[0] == "nestor · openai:gpt-5 · new session ses_1 · /work/p"
    assert lines[2] == "nestor · openai:gpt-5 · resumed ses_2 (4 messages) · /work/p"


def test_usage_summary_is_honest_about_unpriced_requests() -> None:
    assert usage_summary(Usage(requests=1, input_tokens=900, output_tokens=50)) == (
        "1 request · 900 in / 50 out · cost unknown"
    )
    mixed = Usage(requests=3, input_tokens=2000, output_tokens=10, cache_read_tokens=1500, cost_usd=0.5)
    mixed.unpriced_requests = 1
    assert usage_summary(mixed) == "3 requests · 2.0k in / 10 out · 1.5k cache read · $0.50 (+1 unpriced)"


def test_small_formatters() -> None:
    assert format_duration(0.25) == "0.2s"
    assert format_duration(42.4) == "42s"
    assert format_duration(125) == "2m05s"
    assert short_args({"command": "git status", "timeout": 30}) == "git status"
    assert short_args({"a": 1, "b": "two"}) == "1 two"
    assert short_args({"command": "x" * 50}, limit=10) == "x" * 9 + "…"


def test_compaction_lines_say_why_what_it_saved_and_what_it_cost(
    renderer: EventRenderer, buffer: io.StringIO
) -> None:
    renderer.handle(
        CompactionStarted(agent_id=MAIN, trigger="threshold", context_tokens=170_000, context_window=200_000)
    )
    renderer.handle(
        Compacted(
            agent_id=MAIN,
            trigger="threshold",
            tokens_before=170_000,
            tokens_after=31_500,
            summarized_messages=120,
            kept_messages=6,
            usage=Usage(input_tokens=90_000, output_tokens=1_800, cost_usd=0.297),
            duration_s=12.5,
        )
    )
    assert " ".join(lines_of(buffer)) == (
        "⟳ compacting the history (threshold): 170.0k of 200.0k tokens (85%) "
        "⟳ context compacted: 170.0k → 31.5k tokens; 120 messages summarised, 6 kept · summary 90.0k in, "
        "1.8k out, $0.30 · 12s"
    )


def test_counts_agree_with_their_noun() -> None:
    assert [counted(n, "message") for n in (0, 1, 2)] == ["0 messages", "1 message", "2 messages"]

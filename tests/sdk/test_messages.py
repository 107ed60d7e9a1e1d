"""``MessageFeed``: events of a tree as SDK messages, in order, each naming its agent and task call."""

from __future__ import annotations

from nestor.api import (
    AgentStarted,
    AssistantMessage,
    Compacted,
    ErrorEvent,
    Message,
    RequestFinished,
    SystemMessage,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolStarted,
    ToolUseBlock,
    Usage,
    UserMessage,
)
from nestor.sdk.messages import MessageFeed


def drain(feed: MessageFeed) -> list[Message | None]:
    items: list[Message | None] = []
    while not feed.queue.empty():
        items.append(feed.queue.get_nowait())
    return items


def test_text_is_one_message_per_request_and_a_tool_call_closes_the_text_before_it() -> None:
    feed = MessageFeed("main", "openai-chat:gpt-4o")
    feed.init = {"session_id": "main"}
    for event in (
        AgentStarted(agent_id="main"),
        ThinkingDelta(agent_id="main", text="Let me "),
        ThinkingDelta(agent_id="main", text="look."),
        TextDelta(agent_id="main", text="Hello, "),
        TextDelta(agent_id="main", text="world."),
        ToolStarted(agent_id="main", tool_call_id="call_1", tool_name="ls", args={"path": "."}),
    ):
        feed.handle(event)
    feed.tool_result("main", "call_1", "a.py\nb.py", False)
    feed.handle(TextDelta(agent_id="main", text="Two files."))
    feed.handle(RequestFinished(agent_id="main", model="m", usage=Usage(), run_usage=Usage()))
    feed.end()

    init, thinking, text, use, result, answer, end = drain(feed)
    assert isinstance(init, SystemMessage) and init.subtype == "init" and feed.init is None
    assert isinstance(thinking, AssistantMessage) and thinking.content == [ThinkingBlock("Let me look.")]
    assert isinstance(text, AssistantMessage) and text.content == [TextBlock("Hello, world.")]
    assert isinstance(use, AssistantMessage) and use.content == [ToolUseBlock("call_1", "ls", {"path": "."})]
    assert isinstance(result, UserMessage) and result.parent_tool_use_id is None
    assert isinstance(answer, AssistantMessage) and answer.content == [TextBlock("Two files.")]
    assert answer.model == "openai-chat:gpt-4o" and answer.agent_type == "coder" and end is None


def test_a_sub_agents_messages_name_it_and_the_task_call_that_started_it() -> None:
    feed = MessageFeed("main", "large")
    start = AgentStarted(
        agent_id="child",
        parent_id="main",
        parent_tool_call_id="call_task",
        depth=1,
        agent_type="explore",
        model="small",
    )
    feed.handle(start)
    feed.handle(TextDelta(agent_id="child", text="Found it."))
    feed.handle(TextDelta(agent_id="main", text="Waiting."))
    feed.end()
    said = [item for item in drain(feed) if isinstance(item, AssistantMessage)]
    child = next(message for message in said if message.agent_id == "child")
    main = next(message for message in said if message.agent_id == "main")
    assert (child.agent_type, child.parent_tool_use_id, child.model) == ("explore", "call_task", "small")
    assert (main.agent_type, main.parent_tool_use_id) == ("coder", None)


def test_errors_and_compactions_are_system_messages() -> None:
    feed = MessageFeed("main", "large")
    feed.handle(ErrorEvent(agent_id="main", message="rate limited", hint="wait"))
    compacted = Compacted(
        agent_id="main",
        trigger="threshold",
        tokens_before=900,
        tokens_after=100,
        summarized_messages=8,
        kept_messages=2,
    )
    feed.handle(compacted)
    error, compact = drain(feed)
    assert (
        isinstance(error, SystemMessage)
        and error.subtype == "error"
        and error.data["message"] == "rate limited"
    )
    assert isinstance(compact, SystemMessage) and compact.subtype == "compact_boundary"
    assert compact.data["pre_tokens"] == 900

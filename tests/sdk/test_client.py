"""``query`` and ``Client`` against the scripted loopback server: the whole tree's messages, turns, resume."""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from pathlib import Path

from nestor.api import (
    AssistantMessage,
    Client,
    ResultMessage,
    ScriptedOpenAIServer,
    ServerReply,
    ServerToolCall,
    ServerUsage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)
from nestor.testing import first_user_text
from tests.sdk.support import Routes, collect, options
from tests.server_routes import Route, router, task_call

USAGE = ServerUsage(prompt_tokens=100, completion_tokens=10)


def tree_routes() -> Routes:
    """The main agent lists the files, then asks explore to read one; explore reads it and answers."""
    return {
        "what is here?": [
            ServerReply(text="Looking.", tool_calls=(ServerToolCall("ls", {"path": "."}),), usage=USAGE),
            ServerReply(
                tool_calls=(task_call("read a.py", "EXPLORE a.py", subagent_type="explore"),), usage=USAGE
            ),
            ServerReply(text="Two files; a.py sets x.", usage=USAGE),
        ],
        "EXPLORE": [
            ServerReply(tool_calls=(ServerToolCall("view", {"path": "a.py"}),), usage=USAGE),
            ServerReply(text="a.py sets x to 1.", usage=USAGE),
        ],
    }


async def test_a_query_streams_the_whole_tree_with_each_messages_agent_and_parent_tool_use(
    tmp_path: Path,
) -> None:
    with ScriptedOpenAIServer(router(tree_routes())) as server:
        messages = await collect("what is here?", options(tmp_path, server))

    init, *middle, result = messages
    assert isinstance(init, SystemMessage) and init.subtype == "init" and "explore" in init.data["agents"]
    assert isinstance(result, ResultMessage)
    main = [
        m for m in middle if isinstance(m, AssistantMessage | UserMessage) and m.parent_tool_use_id is None
    ]
    blocks = [m.content[0] for m in main if isinstance(m.content, list)]
    assert isinstance(blocks[0], TextBlock) and blocks[0].text == "Looking."
    ls_use, ls_result, task_use, task_result, answer = blocks[1:]
    assert isinstance(ls_use, ToolUseBlock) and ls_use.name == "ls" and ls_use.input == {"path": "."}
    assert isinstance(ls_result, ToolResultBlock) and ls_result.tool_use_id == ls_use.id
    assert "a.py" in (ls_result.content or "") and ls_result.is_error is False
    assert isinstance(task_use, ToolUseBlock) and task_use.name == "task"
    assert isinstance(task_result, ToolResultBlock) and task_result.tool_use_id == task_use.id
    assert "a.py sets x to 1." in (task_result.content or "")
    assert isinstance(answer, TextBlock) and answer.text == "Two files; a.py sets x."
    assert all(m.agent_type == "coder" and m.agent_id == result.session_id for m in main)

    child = [m for m in middle if isinstance(m, AssistantMessage | UserMessage) and m.parent_tool_use_id]
    assert {m.parent_tool_use_id for m in child} == {task_use.id}
    assert {m.agent_type for m in child} == {"explore"}
    assert len({m.agent_id for m in child}) == 1 and child[0].agent_id != result.session_id
    view_use, view_result, report = (m.content[0] for m in child if isinstance(m.content, list))
    assert isinstance(view_use, ToolUseBlock) and view_use.name == "view"
    assert isinstance(view_result, ToolResultBlock) and "x = 1" in (view_result.content or "")
    assert isinstance(report, TextBlock) and report.text == "a.py sets x to 1."
    assert middle.index(child[-1]) < middle.index(main[-2])  # the sub-agent's messages come before its result

    assert result.subtype == "success" and not result.is_error and result.result == "Two files; a.py sets x."
    assert result.num_turns == 3 and result.stop_reason == "completed"
    assert result.usage is not None and result.usage["input_tokens"] == 500 and result.usage["requests"] == 5
    assert result.total_cost_usd is not None and result.total_cost_usd > 0
    assert result.duration_ms >= 0


async def test_a_client_keeps_one_conversation_over_several_prompts(tmp_path: Path) -> None:
    routes: Routes = {
        "first question": [ServerReply(text="First answer."), ServerReply(text="Second answer.")]
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        async with Client(options(tmp_path, server)) as client:
            await client.query("first question")
            first = [message async for message in client.receive_response()]
            await client.query("second question")
            second = [message async for message in client.receive_response()]
            session_id = client.session_id
        bodies = [body for body in server.requests if first_user_text(body) == "first question"]

    assert isinstance(first[-1], ResultMessage) and first[-1].result == "First answer."
    assert isinstance(second[-1], ResultMessage) and second[-1].result == "Second answer."
    assert first[-1].session_id == second[-1].session_id == session_id
    texts = [str(message["content"]) for message in bodies[-1]["messages"]]
    assert "First answer." in texts and "second question" in texts


async def test_resume_goes_on_with_a_stored_session(tmp_path: Path) -> None:
    routes: Routes = {
        "remember the word kiwi": [ServerReply(text="Noted."), ServerReply(text="The word was kiwi.")]
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        first = await collect("remember the word kiwi", options(tmp_path, server))
        session_id = first[-1].session_id if isinstance(first[-1], ResultMessage) else ""
        again = await collect("which word?", options(tmp_path, server, resume=session_id))
        last_body = [body for body in server.requests if first_user_text(body) == "remember the word kiwi"][
            -1
        ]

    assert isinstance(again[-1], ResultMessage) and again[-1].result == "The word was kiwi."
    assert again[-1].session_id == session_id
    texts = [str(message["content"]) for message in last_body["messages"]]
    assert "remember the word kiwi" in texts and "Noted." in texts


async def test_interrupt_stops_the_run_and_its_result_says_cancelled(tmp_path: Path) -> None:
    routes: Routes = {"take your time": [ServerReply(text="Slow answer.", delay=30)]}
    with ScriptedOpenAIServer(router(routes)) as server:
        async with Client(options(tmp_path, server)) as client:
            await client.query("take your time")
            seen = []
            async for message in client.receive_response():
                seen.append(message)
                if isinstance(message, SystemMessage):
                    await client.interrupt()

    result = seen[-1]
    assert isinstance(result, ResultMessage) and result.stop_reason == "cancelled"
    assert result.subtype == "error_during_execution" and result.is_error


async def test_query_lets_go_of_its_session_when_the_program_stops_reading(tmp_path: Path) -> None:
    routes: Routes = {"hello": [ServerReply(text="Hi."), ServerReply(text="Hi again.")]}
    session_id = ""
    with ScriptedOpenAIServer(router(routes)) as server:
        async with aclosing(query("hello", options(tmp_path, server))) as messages:
            async for message in messages:
                if isinstance(message, AssistantMessage):
                    session_id = message.agent_id
                    break
        second = await collect("hello", options(tmp_path, server, resume=session_id))
    assert isinstance(second[-1], ResultMessage) and second[-1].result == "Hi again."
    assert second[-1].session_id == session_id


async def test_leaving_the_client_mid_run_stops_the_run_and_lets_go_of_the_session(tmp_path: Path) -> None:
    replies: list[ServerReply | Route] = [ServerReply(text="Too slow.", delay=30)]
    with ScriptedOpenAIServer(router({"slow one": replies})) as server:
        async with asyncio.timeout(20):  # only stops a hung test: leaving must not wait for the reply
            async with Client(options(tmp_path, server)) as client:
                await client.query("slow one")
                while not any(first_user_text(body) == "slow one" for body in server.requests):  # noqa: ASYNC110
                    await asyncio.sleep(0.01)  # the request is out: the run waits for its reply
                session_id = client.session_id
    with ScriptedOpenAIServer(router({"slow one": [ServerReply(text="Back.")]})) as server:
        again = await collect("again", options(tmp_path, server, resume=session_id))
    assert isinstance(again[-1], ResultMessage) and again[-1].result == "Back."

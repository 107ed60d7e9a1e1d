"""``AgentOptions.hooks``: Claude Agent SDK-shaped hook callbacks, for every agent of the tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nestor.api import HookMatcher, ResultMessage, ScriptedOpenAIServer, ToolResultBlock, UserMessage
from tests.sdk.support import collect, options
from tests.sdk.test_client import tree_routes
from tests.server_routes import router


async def test_a_pre_tool_use_callback_sees_every_agents_calls_and_its_deny_reaches_the_model(
    tmp_path: Path,
) -> None:
    seen: list[dict[str, Any]] = []

    async def guard(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append(data)
        if data["tool_name"] != "LS":
            return {}
        decision = {"permissionDecision": "deny", "permissionDecisionReason": "no listing here"}
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", **decision}}

    hooks = {"PreToolUse": [HookMatcher(None, [guard])]}
    with ScriptedOpenAIServer(router(tree_routes())) as server:
        messages = await collect("what is here?", options(tmp_path, server, hooks=hooks))

    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
    results = [
        block
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for block in m.content
        if isinstance(block, ToolResultBlock)
    ]
    assert results[0].is_error and "no listing here" in (results[0].content or "")
    assert "x = 1" in (results[-2].content or "")  # explore's view ran: only LS was denied
    by_tool = {data["tool_name"]: data for data in seen}
    assert {"LS", "Agent", "Read"} <= set(by_tool)
    assert by_tool["Read"]["agent_type"] == "explore" and by_tool["Read"]["depth"] == 1
    assert by_tool["LS"]["depth"] == 0 and by_tool["LS"]["parent_agent_id"] is None
    assert by_tool["Read"]["parent_agent_id"] == by_tool["LS"]["agent_id"]

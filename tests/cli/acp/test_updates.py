"""Golden JSON of each update kind nestor sends an editor, as the wire carries it.

The updates are made from events (and a stored history) by the same code ``nestor acp`` runs; a
change to what an editor receives shows as a diff of ``golden/updates.json``. After a deliberate
change, regenerate it with ``NESTOR_UPDATE_GOLDEN=1 pytest tests/cli/acp/test_updates.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from nestor.cli.acp.history import replay
from nestor.cli.acp.modes import config_options, mode_state
from nestor.cli.acp.outbox import Outbox
from nestor.cli.acp.prompt import commands_update
from nestor.cli.acp.session import usage_update
from nestor.cli.acp.updates import UpdateTranslator
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    Event,
    TextDelta,
    ThinkingDelta,
    TodosUpdated,
    ToolFinished,
    ToolStarted,
)
from nestor.core.usage import Usage

GOLDEN = Path(__file__).parent / "golden" / "updates.json"
ROOT = Path("/project")
MAIN = "ses_main"
CHILD = "ses_child"


def wire(update: Any) -> dict[str, Any]:
    return update.model_dump(mode="json", by_alias=True, exclude_none=True)


def live_updates() -> dict[str, Any]:
    translator = UpdateTranslator(MAIN, ROOT, is_background=lambda _id: False)
    events: list[Event] = [
        ThinkingDelta(agent_id=MAIN, text="Let me look.", timestamp=0),
        TextDelta(agent_id=MAIN, text="I will fix it.", timestamp=0),
        ToolStarted(
            agent_id=MAIN,
            tool_call_id="call_1",
            tool_name="edit",
            args={"path": "src/app.py", "old_string": "hi", "new_string": "hello"},
            timestamp=0,
        ),
        ToolFinished(agent_id=MAIN, tool_call_id="call_1", tool_name="edit", preview="Edited", timestamp=0),
        ToolStarted(
            agent_id=MAIN,
            tool_call_id="call_2",
            tool_name="task",
            args={"description": "find callers", "prompt": "who calls greet?", "subagent_type": "explore"},
            timestamp=0,
        ),
        AgentStarted(
            agent_id=CHILD,
            parent_id=MAIN,
            parent_tool_call_id="call_2",
            depth=1,
            agent_type="explore",
            description="find callers",
            model="openai-chat:gpt-4o",
            timestamp=0,
        ),
        ToolStarted(
            agent_id=CHILD, tool_call_id="call_1", tool_name="grep", args={"pattern": "greet"}, timestamp=0
        ),
        ToolFinished(
            agent_id=CHILD, tool_call_id="call_1", tool_name="grep", preview="src/app.py:1", timestamp=0
        ),
        AgentFinished(
            agent_id=CHILD,
            parent_id=MAIN,
            depth=1,
            agent_type="explore",
            stop_reason="completed",
            result="only its definition",
            num_turns=2,
            usage=Usage(input_tokens=100, output_tokens=20, requests=2),
            duration_s=1.5,
            timestamp=0,
        ),
        TodosUpdated(
            agent_id=MAIN,
            todos=[
                {"content": "fix greet", "status": "completed"},
                {"content": "run tests", "status": "pending"},
            ],
            timestamp=0,
        ),
    ]
    produced: list[dict[str, Any]] = []
    for event in events:
        produced += [wire(update) for update, _key in translator.handle(event)]
    return {"live": produced}


def other_updates() -> dict[str, Any]:
    history = [
        ModelRequest(parts=[UserPromptPart(content="what does greet do?")]),
        ModelResponse(parts=[ToolCallPart("view", {"path": "src/app.py"}, tool_call_id="call_1")]),
        ModelRequest(parts=[ToolReturnPart("view", "     1\tdef greet(): ...", tool_call_id="call_1")]),
        ModelResponse(parts=[TextPart(content="It greets.")]),
        ModelRequest(
            parts=[
                UserPromptPart(
                    content=["and on this screenshot?", BinaryContent(b"\x89PNG", media_type="image/png")]
                )
            ]
        ),
        ModelResponse(parts=[TextPart(content="The same greeting.")]),
    ]
    options = config_options("ask", {"large": "openai-chat:gpt-4o", "small": None}, ["local:qwen"])
    return {
        "replayed": [wire(update) for update in replay(history, project_root=ROOT)],
        "available_commands_update": wire(commands_update()),
        "usage_update": wire(
            usage_update(1200, 128000, Usage(input_tokens=1000, output_tokens=200, requests=2))
        ),
        "modes": wire(mode_state("ask")),
        "config_options": [wire(option) for option in options],
    }


def test_every_update_kind_matches_its_golden_json() -> None:
    produced = {**live_updates(), **other_updates()}
    if os.environ.get("NESTOR_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(produced, indent=2, ensure_ascii=False) + "\n")
    assert produced == json.loads(GOLDEN.read_text())
    kinds = {update["sessionUpdate"] for group in ("live", "replayed") for update in produced[group]}
    assert kinds == {
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "user_message_chunk",
    }


async def test_the_outbox_merges_chunks_and_keeps_only_the_last_progress_of_a_card() -> None:
    sent: list[dict[str, Any]] = []

    async def send(update: Any) -> None:
        sent.append(wire(update))

    outbox = Outbox(send)
    translator = UpdateTranslator(MAIN, ROOT, is_background=lambda _id: False)
    for event in [
        TextDelta(agent_id=MAIN, text="one ", timestamp=0),
        TextDelta(agent_id=MAIN, text="two", timestamp=0),
        AgentStarted(agent_id=CHILD, parent_id=MAIN, parent_tool_call_id="call_9", depth=1, timestamp=0),
        TextDelta(agent_id=CHILD, text="thinking", timestamp=0),
        TextDelta(agent_id=CHILD, text=" harder", timestamp=0),
    ]:
        for update, key in translator.handle(event):
            outbox.put(update, key)
    await outbox.close()

    assert [update["sessionUpdate"] for update in sent] == ["agent_message_chunk", "tool_call_update"]
    assert sent[0]["content"]["text"] == "one two"
    assert sent[1]["content"][0]["content"]["text"].endswith("thinking harder")

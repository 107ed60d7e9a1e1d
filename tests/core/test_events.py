from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from nestor.core.events import AgentFinished, EventAdapter, RequestFinished, ToolFinished
from nestor.core.usage import Usage


def test_events_round_trip_through_json_by_their_type() -> None:
    event = ToolFinished(agent_id="ses_1", tool_call_id="c1", tool_name="bash", outcome="failed", preview="x")
    parsed = EventAdapter.validate_json(event.model_dump_json())
    assert parsed == event
    assert isinstance(parsed, ToolFinished)


def test_usage_in_events_is_typed_and_written_as_the_same_json_as_before() -> None:
    usage = Usage(input_tokens=1200, output_tokens=34, requests=2, cost_usd=0.0042)
    event = AgentFinished(agent_id="ses_1", stop_reason="completed", result="done", usage=usage)

    assert isinstance(event.usage, Usage)
    written = json.loads(event.model_dump_json())
    # stream-json readers get Usage.to_dict() (total_tokens included), key for key.
    assert written["usage"] == usage.to_dict()
    assert list(written["usage"]) == list(usage.to_dict())
    parsed = EventAdapter.validate_json(event.model_dump_json())
    assert isinstance(parsed, AgentFinished) and parsed.usage == usage


def test_request_usage_is_a_snapshot_the_running_total_does_not_change() -> None:
    running = Usage(input_tokens=10, requests=1)
    event = RequestFinished(agent_id="ses_1", model="m", usage=running.copy(), run_usage=running.copy())
    running.add(Usage(input_tokens=5, requests=1))
    assert event.run_usage.input_tokens == 10


def test_an_unknown_stop_reason_is_refused() -> None:
    with pytest.raises(ValidationError):
        AgentFinished.model_validate({"agent_id": "a", "stop_reason": "bored", "result": ""})

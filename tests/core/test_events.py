from __future__ import annotations

from nestor.core.events import EventAdapter, ToolFinished


def test_events_round_trip_through_json_by_their_type() -> None:
    event = ToolFinished(agent_id="ses_1", tool_call_id="c1", tool_name="bash", outcome="failed", preview="x")
    parsed = EventAdapter.validate_json(event.model_dump_json())
    assert parsed == event
    assert isinstance(parsed, ToolFinished)

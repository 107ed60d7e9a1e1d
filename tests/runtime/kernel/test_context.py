"""The size of the next request: reported usage plus estimates of what was added since."""

from __future__ import annotations

from pydantic_ai.messages import (
    BinaryContent,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from nestor.runtime.kernel.context import ContextPolicy, context_tokens, fixed_tokens, message_tokens


def test_policy_thresholds() -> None:
    policy = ContextPolicy(context_window=200_000)
    assert policy.threshold_tokens == 170_000
    assert policy.keep_recent_tokens == 40_000
    assert ContextPolicy(context_window=1000, threshold=0.5).threshold_tokens == 500


def test_messages_are_estimated_from_their_text() -> None:
    small = message_tokens(ModelRequest(parts=[UserPromptPart("hi")]))
    big = message_tokens(ModelRequest(parts=[UserPromptPart("x" * 4000)]))
    assert big - small >= 990
    result = ModelRequest(parts=[ToolReturnPart("grep", "y" * 8000, tool_call_id="c")])
    assert message_tokens(result) >= 2000
    call = ModelResponse(parts=[ToolCallPart("edit", {"new": "z" * 400}, "c")])
    assert message_tokens(call) >= 100
    image = BinaryContent(data=b"\x89PNG", media_type="image/png")
    image_prompt = ModelRequest(parts=[UserPromptPart(["look", image])])
    assert message_tokens(image_prompt) > 1000


def test_reported_usage_wins_over_estimates() -> None:
    history = [
        ModelRequest(parts=[UserPromptPart("x" * 400)]),
        ModelResponse(parts=[TextPart("ok")], usage=RequestUsage(input_tokens=5000, output_tokens=20)),
        ModelRequest(parts=[UserPromptPart("y" * 400)]),
    ]
    assert context_tokens(history, fixed=999) == 5020 + message_tokens(history[2])


def test_without_reported_usage_everything_is_estimated() -> None:
    history = [
        ModelRequest(parts=[UserPromptPart("x" * 400)]),
        ModelResponse(parts=[TextPart("ok")]),  # a provider that reports no usage
    ]
    assert context_tokens(history, fixed=300) == 300 + message_tokens(history[0]) + message_tokens(history[1])


def test_usage_reported_before_the_trusted_index_is_ignored() -> None:
    history = [
        ModelRequest(parts=[UserPromptPart("summary")]),
        ModelResponse(parts=[TextPart("ok")], usage=RequestUsage(input_tokens=90_000, output_tokens=20)),
        ModelRequest(parts=[UserPromptPart("next")]),
    ]
    assert context_tokens(history, fixed=100, trusted_from=2) < 1000
    assert context_tokens(history, fixed=100, trusted_from=0) > 90_000


def test_fixed_tokens_count_instructions_and_tool_schemas() -> None:
    tool = ToolDefinition(name="view", description="d" * 400, parameters_json_schema={"type": "object"})
    assert fixed_tokens("s" * 800, []) == 200
    assert fixed_tokens("s" * 800, [tool]) > 300

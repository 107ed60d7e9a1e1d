"""The local model on a scripted engine: streaming, the three call forms, the grammar, usage, errors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai.direct import model_request, model_request_stream
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters

from nestor.providers.local.chat_format import ChatTemplate
from nestor.providers.local.model import LocalModel, call_intent, starts_user_turn, system_turn_length
from nestor.providers.local.text_engine import Generated, InfillMarkers, PromptEvaluated, PromptTooLongError
from tests.providers.local.tools import GREP, QWEN_TEMPLATE

PARAMETERS = ModelRequestParameters(
    function_tools=[GREP], allow_text_output=True, instruction_parts=[InstructionPart(content="Be brief.")]
)


@dataclass
class Call:
    prompt: str
    json_schema: dict[str, Any] | None
    temperature: float
    stable_prefix: int = 0


@dataclass
class ScriptedEngine:
    """Plays one list of text pieces per generation and records what it was asked."""

    phases: list[list[str]]
    calls: list[Call] = field(default_factory=list[Call])
    too_long: bool = False
    markers: InfillMarkers | None = None

    async def infill_markers(self) -> InfillMarkers | None:
        return self.markers

    async def generate(
        self,
        prompt: str,
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] = (),
        json_schema: dict[str, Any] | None = None,
        top_p: float = 0.9,
        seed: int | None = None,
        stable_prefix: int = 0,
    ) -> AsyncIterator[str | PromptEvaluated | Generated]:
        self.calls.append(Call(prompt, json_schema, temperature, stable_prefix))
        if self.too_long:
            raise PromptTooLongError(20_000, 16_384)
        pieces = self.phases.pop(0)
        yield PromptEvaluated(len(prompt) // 4)
        for piece in pieces:
            yield piece
        yield Generated("".join(pieces), len(prompt) // 4, len(pieces), "stop")


def model_on(engine: ScriptedEngine, *, call_first: bool = False) -> LocalModel:
    template = ChatTemplate(QWEN_TEMPLATE, eos_token="<|im_end|>")
    return LocalModel(engine, template, name="tiny", settings={"temperature": 0.0}, call_first=call_first)


def ask(text: str = "Where is add defined?") -> list[ModelMessage]:
    return [ModelRequest(parts=[UserPromptPart(text)])]


async def collect(model: LocalModel, messages: list[ModelMessage]) -> tuple[list[str], ModelResponse]:
    from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPartDelta

    texts: list[str] = []
    async with model_request_stream(model, messages, model_request_parameters=PARAMETERS) as stream:
        async for event in stream:
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                texts.append(event.part.content)
            elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                texts.append(event.delta.content_delta)
        return texts, stream.get()


def calls_of(response: ModelResponse) -> list[tuple[str, dict[str, Any]]]:
    return [
        (part.tool_name, part.args_as_dict()) for part in response.parts if isinstance(part, ToolCallPart)
    ]


def text_of(response: ModelResponse) -> str:
    return "".join(part.content for part in response.parts if isinstance(part, TextPart))


async def test_text_streams_and_the_prompt_is_the_templates_rendering() -> None:
    engine = ScriptedEngine([["The answer", " is 42."]])
    texts, response = await collect(model_on(engine), ask("What is the answer?"))
    assert texts == ["The answer", " is 42."] and text_of(response) == "The answer is 42."
    prompt = engine.calls[0].prompt
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\n# Tools")
    assert '"name": "grep"' in prompt and prompt.endswith(
        "<|im_start|>user\nWhat is the answer?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert engine.calls[0].temperature == 0.0 and engine.calls[0].json_schema is None
    assert response.usage.input_tokens == len(prompt) // 4 and response.usage.output_tokens == 2


async def test_a_tagged_call_is_generated_under_the_grammar_then_the_turn_goes_on() -> None:
    engine = ScriptedEngine(
        [
            ["Let me look.\n", "<tool_call>"],
            ['{"name": "grep", "arguments": {"pattern": "def add"}}'],
            [""],
        ]
    )
    texts, response = await collect(model_on(engine), ask())
    assert "".join(texts) == "Let me look.\n"
    assert calls_of(response) == [("grep", {"pattern": "def add"})]
    grammar_call = engine.calls[1]
    assert grammar_call.prompt.endswith("Let me look.\n<tool_call>\n")
    assert grammar_call.json_schema is not None and "grep" in str(grammar_call.json_schema)
    assert engine.calls[2].prompt.endswith(
        '{"name": "grep", "arguments": {"pattern": "def add"}}\n</tool_call>'
    )
    # Only the first prompt is input; everything generated is output.
    assert response.usage.input_tokens == len(engine.calls[0].prompt) // 4
    assert response.usage.output_tokens == 4


async def test_a_reply_opening_with_json_or_a_json_fence_becomes_a_proper_call() -> None:
    for opening in (['{"name": "add", '], ["```", "json", "\n"]):
        engine = ScriptedEngine([opening, ['{"name": "grep", "arguments": {"pattern": "add"}}'], [""]])
        texts, response = await collect(model_on(engine), ask())
        assert "".join(texts) == "", opening  # the made-up call never reaches the screen
        assert calls_of(response) == [("grep", {"pattern": "add"})]
        assert engine.calls[1].prompt.endswith("<|im_start|>assistant\n<tool_call>\n")


async def test_a_fenced_call_after_some_text_is_found_at_the_end_and_hidden() -> None:
    fence = '```json\n{"name": "grep", "arguments": {"pattern": "x"}}\n```'
    engine = ScriptedEngine([["I will search.\n", fence]])
    texts, response = await collect(model_on(engine), ask())
    assert "".join(texts) == "I will search.\n"
    assert calls_of(response) == [("grep", {"pattern": "x"})]
    assert len(engine.calls) == 1


async def test_call_first_answers_a_new_prompt_with_a_call_but_not_tool_results() -> None:
    engine = ScriptedEngine([['{"name": "grep", "arguments": {"pattern": "add"}}'], [""]])
    _, response = await collect(model_on(engine, call_first=True), ask())
    assert calls_of(response) == [("grep", {"pattern": "add"})]
    assert engine.calls[0].json_schema is not None
    assert engine.calls[0].prompt.endswith("<|im_start|>assistant\n<tool_call>\n")

    history = [
        *ask(),
        response,
        ModelRequest(parts=[ToolReturnPart("grep", "calc.py:1: def add", tool_call_id=calls_id(response))]),
    ]
    engine = ScriptedEngine([["It is in calc.py."]])
    _, answer = await collect(model_on(engine, call_first=True), history)
    assert text_of(answer) == "It is in calc.py." and engine.calls[0].json_schema is None
    assert "<tool_response>\ncalc.py:1: def add\n</tool_response>" in engine.calls[0].prompt


async def test_every_generation_names_the_system_turn_as_the_stable_prefix() -> None:
    engine = ScriptedEngine(
        [["Let me look.\n", "<tool_call>"], ['{"name": "grep", "arguments": {"pattern": "add"}}'], [""]]
    )
    _, response = await collect(model_on(engine), ask())

    first = engine.calls[0]
    system_turn = first.prompt[: first.stable_prefix]
    assert system_turn.startswith("<|im_start|>system\nBe brief.\n\n# Tools")
    assert '"name": "grep"' in system_turn and "</tools>" in system_turn
    assert system_turn.endswith("<|im_end|>\n") and system_turn.count("<|im_end|>") == 1
    assert first.prompt[first.stable_prefix :].startswith("<|im_start|>user\n")
    # The grammar phase and the one after it extend the prompt; the prefix stays.
    assert [call.stable_prefix for call in engine.calls] == [first.stable_prefix] * 3
    assert all(call.prompt.startswith(system_turn) for call in engine.calls)

    history = [
        *ask(),
        response,
        ModelRequest(parts=[ToolReturnPart("grep", "calc.py:1", tool_call_id=calls_id(response))]),
    ]
    engine = ScriptedEngine([["Found."]])
    await collect(model_on(engine), history)
    assert engine.calls[0].prompt[: engine.calls[0].stable_prefix] == system_turn  # the next turn too


async def test_a_call_continues_the_prompt_as_the_template_renders_it_in_the_history() -> None:
    engine = ScriptedEngine([['{"arguments": {"pattern": "add"}, "name": "grep"}'], [""]])
    _, response = await collect(model_on(engine, call_first=True), ask())

    after_call = engine.calls[1].prompt
    assert after_call.endswith('<tool_call>\n{"name": "grep", "arguments": {"pattern": "add"}}\n</tool_call>')
    history = [
        *ask(),
        response,
        ModelRequest(parts=[ToolReturnPart("grep", "calc.py:1", tool_call_id=calls_id(response))]),
    ]
    engine = ScriptedEngine([["Found."]])
    await collect(model_on(engine), history)
    assert engine.calls[0].prompt.startswith(after_call)  # what was evaluated is kept


def test_system_turn_length_is_what_the_template_renders_for_the_system_message_alone() -> None:
    template = ChatTemplate(QWEN_TEMPLATE, eos_token="<|im_end|>")
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    prompt = template.render(chat, None)
    assert prompt[: system_turn_length(template, chat, None, prompt)] == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
    )
    # No system message (nestor always sends one): no prefix, whatever the template prints.
    user_only = chat[1:]
    assert system_turn_length(template, user_only, None, template.render(user_only, None)) == 0


def test_no_stable_prefix_when_the_template_cannot_render_the_system_turn_alone() -> None:
    chat = [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]
    refuses = ChatTemplate(
        "{% if messages|length < 2 %}{{ raise_exception('a user turn is needed') }}{% endif %}"
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
    )
    assert system_turn_length(refuses, chat, None, refuses.render(chat)) == 0
    # The last message is rendered differently: the system turn alone is not the prompt's start.
    marks_last = ChatTemplate(
        "{% for m in messages %}{% if loop.last %}!{% endif %}{{ m.content }}{% endfor %}"
    )
    assert system_turn_length(marks_last, chat, None, marks_last.render(chat)) == 0
    # A system turn that is the whole prompt leaves nothing to generate from: no prefix either.
    plain = ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}")
    assert system_turn_length(plain, chat[:1], None, plain.render(chat[:1])) == 0


def calls_id(response: ModelResponse) -> str:
    return next(part.tool_call_id for part in response.parts if isinstance(part, ToolCallPart))


async def test_a_prompt_too_long_is_a_context_window_error() -> None:
    engine = ScriptedEngine([], too_long=True)
    with pytest.raises(ModelContextWindowExceededError):
        await model_request(model_on(engine), ask(), model_request_parameters=PARAMETERS)


async def test_requests_without_tools_never_look_for_calls() -> None:
    engine = ScriptedEngine([['{"title": "x"}']])
    response = await model_request(
        model_on(engine, call_first=True), ask(), model_request_parameters=ModelRequestParameters()
    )
    assert text_of(response) == '{"title": "x"}' and calls_of(response) == []


def test_call_intent() -> None:
    assert call_intent("Let me check <tool_call>") == len("Let me check ")
    assert call_intent('Like this:\n<tool_response>\n{"name"') == len("Like this:\n")
    assert call_intent('  {"name"') == 0
    assert call_intent("```json\n") == 0 and call_intent("```\n{") == 0
    assert call_intent("```") is None  # the fence's language is not known yet
    assert call_intent("```python\nprint(1)") is None
    assert call_intent("The dict {a: 1} is small.") is None


def test_starts_user_turn() -> None:
    assert starts_user_turn(ask())
    tool_result = ModelRequest(parts=[ToolReturnPart("grep", "x", tool_call_id="c")])
    assert not starts_user_turn([*ask(), ModelResponse(parts=[TextPart("a")]), tool_result])
    assert not starts_user_turn([])


QWEN_MARKERS = InfillMarkers("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")


async def test_infill_prompts_with_the_models_markers_and_counts_usage() -> None:
    engine = ScriptedEngine([["    return a ", "+ b\n"]], markers=QWEN_MARKERS)
    response = await model_on(engine).infill("def add(a, b):\n", "\n\nadd(1, 2)\n", max_tokens=32)
    assert response is not None
    assert engine.calls[0].prompt == (
        "<|fim_prefix|>def add(a, b):\n<|fim_suffix|>\n\nadd(1, 2)\n<|fim_middle|>"
    )
    assert engine.calls[0].temperature == 0.0
    assert response.parts == [TextPart("    return a + b\n")]
    assert response.usage.input_tokens == len(engine.calls[0].prompt) // 4
    assert response.usage.output_tokens == 2
    assert response.model_name == "tiny"


async def test_infill_is_none_for_a_model_without_fill_in_the_middle_tokens() -> None:
    engine = ScriptedEngine([])
    assert await model_on(engine).infill("a", "b", max_tokens=8) is None
    assert engine.calls == []


async def test_an_infill_prompt_too_long_is_a_context_window_error() -> None:
    engine = ScriptedEngine([], too_long=True, markers=QWEN_MARKERS)
    with pytest.raises(ModelContextWindowExceededError):
        await model_on(engine).infill("a", "b", max_tokens=8)

"""The llama.cpp engine on the real embedded model: the prefix cache across processes, reuse across turns.

Each engine here is a fresh ``LlamaEngine``, as a new ``nestor run`` process has. These tests need
llama-cpp-python and the model's weight packages (``nestor[local]``); they are skipped without
them, or when ``NESTOR_SKIP_REAL_MODEL=1``. The joined model is kept in ``NESTOR_TEST_MODELS_DIR``
when set, else in pytest's cache directory, so it is joined once per checkout.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.direct import model_request
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters

from nestor.core.errors import ProviderError
from nestor.providers.local.chat_format import ChatTemplate, tools_for_template
from nestor.providers.local.engine import LlamaEngine
from nestor.providers.local.model import LocalModel
from nestor.providers.local.prefix_cache import PrefixCache
from nestor.providers.local.text_engine import EngineOptions, Generated, InfillMarkers, PromptEvaluated
from nestor.providers.local.weights import ensure_bundled_model, find_bundled_parts
from tests.providers.local.tools import GREP, QWEN_TEMPLATE, VIEW

pytestmark = pytest.mark.timeout(900)

CONTEXT = 2048
THREADS = min(2, os.cpu_count() or 1)
SYSTEM = "You are a coding assistant working in a Python repository. Look before you answer."
TEMPLATE = ChatTemplate(QWEN_TEMPLATE, eos_token="<|im_end|>")


@pytest.fixture(scope="module")
def model_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("NESTOR_SKIP_REAL_MODEL") == "1":
        pytest.skip("NESTOR_SKIP_REAL_MODEL=1")
    if find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (nestor[local])")
    try:
        parts = find_bundled_parts()
    except ProviderError as error:
        pytest.skip(error.message)
    if configured := os.environ.get("NESTOR_TEST_MODELS_DIR"):
        models_dir = Path(configured)
    elif (cache := getattr(request.config, "cache", None)) is not None:
        models_dir = Path(cache.mkdir("nestor-models"))
    else:
        models_dir = tmp_path_factory.mktemp("models")
    return ensure_bundled_model(models_dir, parts=parts)


def conversation(*turns: str, with_tools: bool = True) -> tuple[str, int]:
    """A conversation's prompt (system turn, with two tools, then ``turns``) and its system turn's length."""
    tools = tools_for_template([GREP, VIEW]) if with_tools else None
    system = [{"role": "system", "content": SYSTEM}]
    roles = ["user", "assistant"]
    chat = system + [{"role": roles[index % 2], "content": text} for index, text in enumerate(turns)]
    prompt = TEMPLATE.render(chat, tools, add_generation_prompt=True)
    system_turn = TEMPLATE.render(system, tools, add_generation_prompt=False)
    assert prompt.startswith(system_turn)
    return prompt, len(system_turn)


@dataclass
class Outcome:
    text: str
    prompt: PromptEvaluated
    finish_reason: str


async def generate(engine: LlamaEngine, prompt: str, stable_prefix: int, max_tokens: int = 12) -> Outcome:
    evaluated: PromptEvaluated | None = None
    async for item in engine.generate(
        prompt, max_tokens=max_tokens, temperature=0.0, stable_prefix=stable_prefix
    ):
        if isinstance(item, PromptEvaluated):
            evaluated = item
        elif isinstance(item, Generated):
            assert evaluated is not None
            return Outcome(item.text, evaluated, item.finish_reason)
    raise AssertionError("no summary")


def engine_on(model_path: Path, cache_dir: Path | None) -> LlamaEngine:
    return LlamaEngine(
        model_path, EngineOptions(context_window=CONTEXT, threads=THREADS, prefix_cache_dir=cache_dir)
    )


def saved_tokens(state_file: Path) -> list[int]:
    """The prefix tokens recorded in a state file (after its header: magic, key, count, size, CRC)."""
    data = state_file.read_bytes()
    header = struct.Struct("<8s32sIQI")
    count = header.unpack_from(data)[2]
    return list(struct.unpack_from(f"<{count}i", data, header.size))


async def test_a_new_engine_loads_the_saved_prefix_and_generates_the_same_text(
    model_path: Path, tmp_path: Path
) -> None:
    cache_dir = tmp_path / "llama-state"
    prompt, system_turn = conversation("Write a Python function that adds two numbers.")

    cold = engine_on(model_path, cache_dir)
    first = await generate(cold, prompt, system_turn)
    cold.close()
    assert cold.last_prefix is not None and cold.last_prefix.source == "evaluated"
    prefix_tokens = cold.last_prefix.tokens
    assert 100 < prefix_tokens < first.prompt.prompt_tokens
    assert first.prompt.reused_tokens == 0  # nothing was there: all evaluated
    [state_file] = cache_dir.iterdir()
    assert cold.last_prefix.saved_bytes == state_file.stat().st_size
    # Only the prefix's cells are saved (~28 KB a token), not the whole context.
    assert state_file.stat().st_size < 40_000 * prefix_tokens

    warm = engine_on(model_path, cache_dir)  # a new process
    second = await generate(warm, prompt, system_turn)
    assert warm.last_prefix is not None and warm.last_prefix.source == "disk"
    assert second.text == first.text and second.text.strip()
    assert second.prompt.prompt_tokens == first.prompt.prompt_tokens
    assert second.prompt.reused_tokens == prefix_tokens  # only the user turn was evaluated

    # The next turn in the same process keeps everything the previous request evaluated.
    next_prompt, _ = conversation(
        "Write a Python function that adds two numbers.", second.text, "Now one that subtracts."
    )
    third = await generate(warm, next_prompt, system_turn)
    warm.close()
    assert warm.last_prefix.source == "context"
    assert third.prompt.reused_tokens >= second.prompt.prompt_tokens

    plain = engine_on(model_path, None)  # no cache: the prompt evaluated in one go
    baseline = await generate(plain, prompt, system_turn)
    plain.close()
    assert plain.last_prefix is None
    assert baseline.text == first.text


async def test_a_state_llama_cpp_refuses_is_removed_and_the_prefix_evaluated_again(
    model_path: Path, tmp_path: Path
) -> None:
    cache_dir = tmp_path / "llama-state"
    prompt, system_turn = conversation("Where is the function add defined?", with_tools=False)  # short
    cold = engine_on(model_path, cache_dir)
    expected = await generate(cold, prompt, system_turn)
    cold.close()
    [state_file] = cache_dir.iterdir()
    key = state_file.name.removesuffix(".state")
    # Intact as a file (right key, tokens and checksum), but not a state llama.cpp can read.
    PrefixCache(cache_dir).store(key, saved_tokens(state_file), b"\x01" * 4096)

    engine = engine_on(model_path, cache_dir)
    again = await generate(engine, prompt, system_turn)
    engine.close()

    assert engine.last_prefix is not None and engine.last_prefix.source == "evaluated"
    assert again.text == expected.text
    assert state_file.stat().st_size == engine.last_prefix.saved_bytes > 4096  # written again, whole


@dataclass
class Recording:
    """A real engine, recording each generation's prompt summary."""

    engine: LlamaEngine
    prompts: list[PromptEvaluated] = field(default_factory=list[PromptEvaluated])

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
        async for item in self.engine.generate(
            prompt,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            json_schema=json_schema,
            top_p=top_p,
            seed=seed,
            stable_prefix=stable_prefix,
        ):
            if isinstance(item, PromptEvaluated):
                self.prompts.append(item)
            yield item

    async def infill_markers(self) -> InfillMarkers | None:
        return await self.engine.infill_markers()


async def test_tool_call_phases_and_the_next_turn_evaluate_only_what_they_add(
    model_path: Path, tmp_path: Path
) -> None:
    recording = Recording(engine_on(model_path, tmp_path / "llama-state"))
    model = LocalModel(
        recording, TEMPLATE, name="qwen", settings={"temperature": 0.0, "max_tokens": 48}, call_first=True
    )
    parameters = ModelRequestParameters(
        function_tools=[GREP, VIEW],
        allow_text_output=True,
        instruction_parts=[InstructionPart(content=SYSTEM)],
    )
    question: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Where is the function add defined?")])
    ]

    response = await model_request(model, question, model_request_parameters=parameters)
    [call] = [part for part in response.parts if isinstance(part, ToolCallPart)]
    first_request = list(recording.prompts)
    history: list[ModelMessage] = [
        *question,
        response,
        ModelRequest(
            parts=[ToolReturnPart(call.tool_name, "calc.py:1:def add(a, b):", tool_call_id=call.tool_call_id)]
        ),
    ]
    await model_request(model, history, model_request_parameters=parameters)
    recording.engine.close()

    # The call under the grammar, then the text after it: each phase keeps the one before.
    assert len(first_request) >= 2
    for before, after in itertools.pairwise(first_request):
        assert after.reused_tokens >= before.prompt_tokens
    # The next request renders the whole history again: the previous response, call included,
    # is still in the context; only the tool result and the new turn's opening are evaluated.
    next_request = recording.prompts[len(first_request)]
    assert next_request.reused_tokens >= first_request[-1].prompt_tokens
    assert next_request.prompt_tokens - next_request.reused_tokens < 40


LOW_STOCK = """class Inventory:
    def __init__(self, items):
        self._items = items

    def low_stock(self, threshold=5):
        \"\"\"Items whose quantity is at or below ``threshold``, the emptiest first.\"\"\"
"""


async def test_the_embedded_model_fills_in_a_cut_statement(model_path: Path) -> None:
    engine = engine_on(model_path, None)
    model = LocalModel(engine, TEMPLATE, name="qwen")
    response = await model.infill(
        LOW_STOCK, "        return sorted(low, key=lambda item: item.quantity)\n", max_tokens=40
    )
    engine.close()

    # llama.cpp finds Qwen2.5-Coder's fill-in-the-middle tokens, and the middle it writes uses them.
    assert response is not None
    [part] = response.parts
    assert isinstance(part, TextPart)
    middle = part.content
    assert "low = " in middle and "threshold" in middle, middle
    assert response.usage.input_tokens > 40 and response.usage.output_tokens > 5

"""The embedded local model on this machine: prompt and generation speed, and the prefix cache.

Loads the bundled Qwen2.5-Coder-1.5B (Q4_K_M) GGUF and prints, in one run:

1. For 1 and 2 threads, through nestor's engine: the time from a cold prompt of about 700 tokens
   to its first generated token, prompt evaluation speed, and generation speed over 128 greedy
   tokens. Prompt evaluation dominates a first request; generation speed is what a user watches.
2. Generation speed of llama-cpp-python alone (``Llama.create_completion`` streaming, same
   prompt, threads and sampling) beside nestor's whole ``LocalModel`` path (engine thread, event
   loop, pydantic-ai stream), and their ratio: nestor's overhead (the target is 0.9 or more).
3. A new run's time to first token on the compact coder's real system turn (its system prompt
   and tool schemas, rendered by the model's template), with a fresh engine each time as a new
   process has: cold (the prefix evaluated, then saved) and with the prefix loaded from the disk
   cache; the state file's size and its save and load times; then, in the same process, the
   next turn (a tool result appended), which evaluates only the tokens added.

Set ``NESTOR_HOME`` to reuse a joined model (``$NESTOR_HOME/models``); ``BENCH_THREADS`` sets the
threads of parts 2 and 3 (default 2).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic_ai.direct import model_request_stream
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters

from nestor.providers.local.chat_format import ChatTemplate
from nestor.providers.local.engine import LlamaEngine, engine_available
from nestor.providers.local.gguf import read_gguf_info
from nestor.providers.local.model import LocalModel
from nestor.providers.local.text_engine import (
    EngineOptions,
    Generated,
    InfillMarkers,
    PrefixUse,
    PromptEvaluated,
)
from nestor.providers.local.weights import ensure_bundled_model

PROMPT = (
    "<|im_start|>system\nYou are a careful senior Python reviewer.<|im_end|>\n<|im_start|>user\n"
    + "Explain, step by step, what this code does and how to test it.\n\n```python\n"
    + "\n".join(f"def f{n}(x):\n    return x * {n} + {n % 7}" for n in range(40))
    + "\n```<|im_end|>\n<|im_start|>assistant\n"
)
QUESTION = (
    "Explain, step by step, what this code does and how to test it.\n\n```python\n"
    + "\n".join(f"def f{n}(x):\n    return x * {n} + {n % 7}" for n in range(40))
    + "\n```"
)  # PROMPT's user turn: nestor renders the same prompt
GENERATED_TOKENS = 128
PROMPT_TOKENS = [0]  # measured by the first request
RUNS = 2
CONTEXT = 4096
RUN_CONTEXT = 16_384  # what nestor gives the model in a run


async def measure(engine: LlamaEngine) -> tuple[float, float, float]:
    """Return (time to first token s, prompt tokens/s, generated tokens/s) for one cold request."""
    started = time.perf_counter()
    first: float | None = None
    prompt_tokens = 0
    async for item in engine.generate(PROMPT, max_tokens=GENERATED_TOKENS, temperature=0.0):
        if isinstance(item, PromptEvaluated):
            prompt_tokens = PROMPT_TOKENS[0] = item.prompt_tokens
        elif isinstance(item, Generated):
            done = time.perf_counter()
            assert first is not None
            generated = max(item.completion_tokens - 1, 1)
            return first - started, prompt_tokens / (first - started), generated / (done - first)
        elif first is None:
            first = time.perf_counter()
    raise RuntimeError("the engine ended without a summary")


def threads_table(path: Path) -> None:
    """Part 1: cold time to first token and speeds with 1 and 2 threads."""
    rows: list[tuple[int, float, float, float]] = []
    for threads in (1, 2):
        engine = LlamaEngine(path, EngineOptions(context_window=CONTEXT, threads=threads))
        samples = []
        for _ in range(RUNS):
            engine.reset_cache()  # every run evaluates the whole prompt, as a first request does
            samples.append(asyncio.run(measure(engine)))
        engine.close()
        ttft, prompt_speed, generate_speed = (
            statistics.median(column) for column in zip(*samples, strict=True)
        )
        rows.append((threads, ttft, prompt_speed, generate_speed))
    print(
        f"Local model (Qwen2.5-Coder-1.5B Q4_K_M, median of {RUNS} cold requests, "
        f"{PROMPT_TOKENS[0]}-token prompt)"
    )
    print("  threads  time to 1st token  prompt tok/s  generate tok/s")
    for threads, ttft, prompt_speed, generate_speed in rows:
        print(f"  {threads:>7}  {ttft:>15.2f} s  {prompt_speed:>12.1f}  {generate_speed:>14.1f}")
    one, two = rows
    print(
        f"  2 threads / 1 thread: generation x{two[3] / one[3]:.2f}, "
        f"time to first token x{two[1] / one[1]:.2f}"
    )


# -- part 2: llama-cpp-python alone vs nestor's LocalModel -------------------------------------------


def speed(times: list[float]) -> float:
    """Tokens per second between the first and the last of the tokens that arrived at ``times``."""
    return (len(times) - 1) / (times[-1] - times[0])


def raw_generation_speed(llama: Any) -> tuple[float, int]:
    """Generated tokens/s of ``Llama.create_completion`` streaming, sampling as nestor's engine does."""
    times: list[float] = []
    for chunk in llama.create_completion(
        PROMPT, max_tokens=GENERATED_TOKENS, temperature=0.0, top_p=0.9, repeat_penalty=1.05, stream=True
    ):
        if chunk["choices"][0]["text"]:
            times.append(time.perf_counter())
    return speed(times), len(times)


async def nestor_generation_speed(model: LocalModel) -> tuple[float, int]:
    """Generated tokens/s of the same prompt through ``LocalModel`` (text streamed to this loop)."""
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(QUESTION)])]
    parameters = ModelRequestParameters(
        instruction_parts=[InstructionPart(content="You are a careful senior Python reviewer.")]
    )
    times: list[float] = []
    async with model_request_stream(model, messages, model_request_parameters=parameters) as stream:
        async for event in stream:
            if isinstance(event, PartStartEvent | PartDeltaEvent):
                times.append(time.perf_counter())
        tokens = stream.usage.output_tokens  # an event may carry more than one token's text
    return (tokens - 1) / (times[-1] - times[0]), tokens


def overhead_table(path: Path, template: ChatTemplate, threads: int) -> None:
    """Part 2: raw llama-cpp-python vs nestor, interleaved so both see the same machine load.

    Both keep their evaluated prompt between runs (the same prompt each time): only the first
    run of each evaluates it, and generation alone is timed, from the first token to the last.
    """
    from llama_cpp import Llama

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    llama = Llama(
        model_path=str(path),
        n_ctx=CONTEXT,
        n_threads=threads,
        n_threads_batch=threads,
        seed=0,
        verbose=False,
    )
    engine = LlamaEngine(path, EngineOptions(context_window=CONTEXT, threads=threads))
    model = LocalModel(engine, template, name="bench", settings={"temperature": 0.0, "max_tokens": 128})
    raw: list[float] = []
    ours: list[float] = []
    counts: set[tuple[int, int]] = set()
    for _ in range(RUNS + 1):
        raw_speed, raw_count = raw_generation_speed(llama)
        our_speed, our_count = asyncio.run(nestor_generation_speed(model))
        raw.append(raw_speed)
        ours.append(our_speed)
        counts.add((raw_count, our_count))
    engine.close()
    llama.close()
    raw_median, our_median = statistics.median(raw), statistics.median(ours)
    print(f"Generation, llama-cpp-python alone vs nestor ({threads} threads, greedy, median of {RUNS + 1})")
    print(f"  llama-cpp-python create_completion  {raw_median:>6.1f} tok/s")
    print(f"  nestor LocalModel                   {our_median:>6.1f} tok/s")
    tokens = ", ".join(f"{a}/{b}" for a, b in sorted(counts))
    print(f"  nestor / raw: {our_median / raw_median:.2f}  (target >= 0.90; tokens raw/nestor: {tokens})")


# -- part 3: a new run's first token, cold and from the prefix cache -------------------------------


@dataclass
class TimedEngine:
    """Passes requests to an engine and notes when each one's first token came and what it reused."""

    engine: LlamaEngine
    started: float = 0.0
    first_token: float | None = None  # of the request started at ``started``
    prompts: list[PromptEvaluated] = field(default_factory=list[PromptEvaluated])
    prefixes: list[PrefixUse | None] = field(default_factory=list[PrefixUse | None])

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
            if isinstance(item, str) and self.first_token is None:
                self.first_token = time.perf_counter() - self.started
            elif isinstance(item, PromptEvaluated):
                self.prompts.append(item)
                self.prefixes.append(self.engine.last_prefix)  # set before the prompt is reported
            yield item

    async def infill_markers(self) -> InfillMarkers | None:
        return await self.engine.infill_markers()


def coder_parameters(project: Path) -> ModelRequestParameters:
    """The compact coder's system prompt and tools, as a run on a small local model sends them.

    The ``task`` tool (delegation) is left out: its description lists the agents of a project.
    """
    from nestor.runtime.factory.prompt import build_system_prompt, builtin_agent_prompt
    from nestor.runtime.factory.toolset import compact_coder_tools
    from nestor.runtime.kernel.tool_schema import tool_definitions

    system_prompt = asyncio.run(
        build_system_prompt(
            builtin_agent_prompt("coder-compact"),
            project,
            user_config_dir=None,
            now=datetime(2025, 1, 6, 9, 0).astimezone(),
        )
    )
    return ModelRequestParameters(
        function_tools=tool_definitions(compact_coder_tools(), brief=True),
        allow_text_output=True,
        instruction_parts=[InstructionPart(content=system_prompt)],
    )


async def one_request(
    model: LocalModel, timed: TimedEngine, messages: list[ModelMessage], parameters: ModelRequestParameters
) -> ModelResponse:
    """Run one request to its end, timing from now."""
    timed.started = time.perf_counter()
    timed.first_token = None
    async with model_request_stream(model, messages, model_request_parameters=parameters) as stream:
        async for _ in stream:
            pass
        return stream.get()


@dataclass
class RunResult:
    """One new run's first request (and, when asked, the next turn's)."""

    first_token: float
    prompt_tokens: int
    reused_tokens: int
    prefix_source: str
    prefix_tokens: int
    prefix_seconds: float
    saved_bytes: int
    save_seconds: float
    next_turn: tuple[float, int, int] | None = None  # first token s, prompt tokens, reused tokens


def new_run(
    path: Path,
    template: ChatTemplate,
    cache_dir: Path,
    parameters: ModelRequestParameters,
    threads: int,
    *,
    next_turn: bool = False,
) -> RunResult:
    """A new process's first request: a fresh engine on ``cache_dir``, the model loaded on demand."""
    engine = LlamaEngine(
        path, EngineOptions(context_window=RUN_CONTEXT, threads=threads, prefix_cache_dir=cache_dir)
    )
    timed = TimedEngine(engine)
    model = LocalModel(
        timed, template, name="bench", settings={"temperature": 0.0, "max_tokens": 48}, call_first=True
    )
    question: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Where is the function add defined in this project?")])
    ]
    response = asyncio.run(one_request(model, timed, question, parameters))
    use = timed.prefixes[0]
    assert use is not None, "the request named no stable prefix"
    first = timed.prompts[0]
    assert timed.first_token is not None
    result = RunResult(
        first_token=timed.first_token,
        prompt_tokens=first.prompt_tokens,
        reused_tokens=first.reused_tokens,
        prefix_source=use.source,
        prefix_tokens=use.tokens,
        prefix_seconds=use.seconds,
        saved_bytes=use.saved_bytes,
        save_seconds=use.save_seconds,
    )
    if next_turn:
        call = next(part for part in response.parts if isinstance(part, ToolCallPart))
        result_text = "calc.py:1:def add(a, b):\ncalc.py:2:    return a - b"
        history: list[ModelMessage] = [
            *question,
            response,
            ModelRequest(parts=[ToolReturnPart(call.tool_name, result_text, tool_call_id=call.tool_call_id)]),
        ]
        before = len(timed.prompts)
        asyncio.run(one_request(model, timed, history, parameters))
        turn = timed.prompts[before]
        assert timed.first_token is not None
        result.next_turn = (timed.first_token, turn.prompt_tokens, turn.reused_tokens)
    engine.close()
    return result


PROJECT_RULES = (
    "Keep functions short and fully typed; public ones get a Google-style docstring.",
    "Run the module's tests before committing, never the whole suite on a shared machine.",
    "Errors shown to users name what failed and how to fix it, in one sentence.",
    "Do not add a dependency without writing down why the standard library is not enough.",
    "Configuration is read once at start-up and passed down; nothing reads the environment later.",
    "Every file written goes through a temporary file and a rename, so a crash leaves no half file.",
    "Log at debug level for what helps a maintainer, never for what the user already sees.",
    "Prefer plain data classes to dictionaries for anything that crosses a module boundary.",
)


def agents_md(sections: int) -> str:
    """A project's instruction file of ``sections`` sections (about 200 tokens each)."""
    lines = ["# Working on this project", ""]
    for section in range(sections):
        lines += [f"## Area {section + 1}: conventions", ""]
        for rule in range(len(PROJECT_RULES)):
            lines.append(
                f"- ({section + 1}.{rule + 1}) {PROJECT_RULES[(section + rule) % len(PROJECT_RULES)]}"
            )
        lines.append("")
    return "\n".join(lines)


@dataclass(frozen=True)
class PrefixCase:
    """One system turn to measure: the compact coder's, with or without project instructions."""

    label: str
    instructions: str | None


def prefix_cache_table(path: Path, template: ChatTemplate, threads: int) -> None:
    """Part 3: a new run's time to first token, cold and with the prefix from the disk cache."""
    cases = [
        PrefixCase("compact coder", None),
        PrefixCase("compact coder + AGENTS.md", agents_md(14)),
    ]
    rows: list[tuple[PrefixCase, RunResult, list[RunResult], int]] = []
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="nestor-bench-prefix-") as scratch:
            cache_dir = Path(scratch) / "llama-state"
            project = Path(scratch) / "project"
            project.mkdir()
            if case.instructions is not None:
                (project / "AGENTS.md").write_text(case.instructions, encoding="utf-8")
            parameters = coder_parameters(project)
            cold = new_run(path, template, cache_dir, parameters, threads)
            cached = [
                new_run(path, template, cache_dir, parameters, threads, next_turn=True) for _ in range(RUNS)
            ]
        assert cold.prefix_source == "evaluated" and all(run.prefix_source == "disk" for run in cached)
        rows.append((case, cold, cached, len(parameters.function_tools)))
    tools = rows[0][3]
    print(
        f"A new run's first token: the compact coder's system turn (prompt and {tools} tools), a fresh "
        f"engine per run (model load included), {threads} threads, n_ctx {RUN_CONTEXT}, median of {RUNS}"
    )
    print(
        f"  {'system turn':<26} {'tokens':>6}  {'cold':>7}  {'cached':>7}  {'state':>8}  "
        f"{'eval':>6}  {'save':>5}  {'load':>5}  next turn (same process)"
    )
    for case, cold, cached, _ in rows:
        cached_first = statistics.median(run.first_token for run in cached)
        load = statistics.median(run.prefix_seconds for run in cached)
        turn = cached[0].next_turn
        next_turn = (
            f"{turn[0]:.2f} s, {turn[1] - turn[2]} of {turn[1]} tokens evaluated" if turn is not None else "-"
        )
        print(
            f"  {case.label:<26} {cold.prefix_tokens:>6}  {cold.first_token:>5.1f} s  {cached_first:>5.2f} s"
            f"  {cold.saved_bytes / 1e6:>5.1f} MB  {cold.prefix_seconds:>4.1f} s  {cold.save_seconds:>5.2f}"
            f"  {load:>5.2f}  {next_turn}"
        )
    print(
        "  cold: the prefix evaluated, then saved; cached: loaded from the disk cache; state: its file; "
        "eval/save/load: seconds"
    )


def main() -> None:
    """Print the three tables."""
    if not engine_available():
        print("Local model: skipped (llama-cpp-python is not installed: pip install 'nestor[local]')")
        return
    data = Path(os.environ.get("NESTOR_HOME") or tempfile.mkdtemp(prefix="nestor-bench-"))
    path = ensure_bundled_model(data / "models")
    info = read_gguf_info(path)
    template = ChatTemplate(info.chat_template or "", eos_token=info.eos_token or "")
    threads = int(os.environ.get("BENCH_THREADS") or 2)
    threads_table(path)
    print()
    overhead_table(path, template, threads)
    print()
    prefix_cache_table(path, template, threads)


if __name__ == "__main__":
    main()

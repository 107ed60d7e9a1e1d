"""The embedded local model on this machine: time to first token and tokens per second.

Loads the bundled Qwen2.5-Coder-1.5B (Q4_K_M) GGUF through nestor's own engine, then for 1 and
2 threads, side by side in one run: the time from a cold prompt of about 700 tokens to its first
generated token, prompt evaluation speed, and generation speed over 128 greedy tokens. Prompt
evaluation dominates a first request; generation speed is what a user watches stream.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from nestor.providers.local.engine import (
    EngineOptions,
    Generated,
    LlamaEngine,
    PromptEvaluated,
    engine_available,
)
from nestor.providers.local.weights import ensure_bundled_model

PROMPT = (
    "<|im_start|>system\nYou are a careful senior Python reviewer.<|im_end|>\n<|im_start|>user\n"
    + "Explain, step by step, what this code does and how to test it.\n\n```python\n"
    + "\n".join(f"def f{n}(x):\n    return x * {n} + {n % 7}" for n in range(40))
    + "\n```<|im_end|>\n<|im_start|>assistant\n"
)
GENERATED_TOKENS = 128
PROMPT_TOKENS = [0]  # measured by the first request
RUNS = 2


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


def main() -> None:
    """Print time to first token and speeds with 1 and 2 threads."""
    if not engine_available():
        print("Local model: skipped (llama-cpp-python is not installed: pip install 'nestor[local]')")
        return
    data = Path(os.environ.get("NESTOR_HOME") or tempfile.mkdtemp(prefix="nestor-bench-"))
    path = ensure_bundled_model(data / "models")
    rows: list[tuple[int, float, float, float]] = []
    for threads in (1, 2):
        engine = LlamaEngine(path, EngineOptions(context_window=4096, threads=threads))
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


if __name__ == "__main__":
    main()

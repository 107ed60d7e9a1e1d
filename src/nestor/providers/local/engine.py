"""llama.cpp in process: one loaded GGUF model, generating on one worker thread.

llama.cpp's context is not thread-safe and holds the KV cache of the previous prompt, which is what
makes a conversation fast: each request only evaluates the tokens added since the last one. So one
engine owns one ``Llama`` and runs every request on its single worker thread, in order. Tokens are
handed to the event loop as they come; cancelling the consumer stops generation at the next token.

``OMP_WAIT_POLICY=PASSIVE`` is set (unless the user set it) before llama.cpp is loaded: with the
default busy-waiting, two threads next to another busy process collapse from ~15 to ~3 tokens/s.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nestor.core.errors import ProviderError

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaGrammar

INSTALL_HINT = "install the embedded engine with: pip install 'nestor[local]'"


@dataclass(frozen=True, slots=True)
class Generated:
    """The end of one generation.

    Attributes:
        text: Everything generated.
        prompt_tokens: Tokens of the prompt.
        completion_tokens: Tokens generated.
        finish_reason: ``stop`` (end of turn or a stop string), ``length`` (``max_tokens``), or
            ``cancelled``.

    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


@dataclass(frozen=True, slots=True)
class PromptEvaluated:
    """The first item of every generation: the prompt fits, and its size in tokens."""

    prompt_tokens: int


class PromptTooLongError(Exception):
    """The prompt does not fit the context window with room for the answer."""

    def __init__(self, prompt_tokens: int, context_window: int) -> None:
        super().__init__(
            f"the prompt has {prompt_tokens} tokens, more than the local model's context of {context_window}"
        )
        self.prompt_tokens = prompt_tokens
        self.context_window = context_window


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """How the engine loads its model.

    Attributes:
        context_window: Tokens of context (llama.cpp's ``n_ctx``).
        threads: CPU threads for generation and prompt evaluation.
        seed: Sampling seed, for reproducible runs.

    """

    context_window: int
    threads: int
    seed: int = 0


class TextEngine(Protocol):
    """What :class:`~nestor.providers.local.model.LocalModel` needs of an engine (tests script one)."""

    def generate(
        self,
        prompt: str,
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] = (),
        json_schema: dict[str, Any] | None = None,
        top_p: float = 0.9,
        seed: int | None = None,
    ) -> AsyncIterator[str | PromptEvaluated | Generated]:
        """See :meth:`LlamaEngine.generate`."""
        ...


def engine_available() -> bool:
    """True when llama-cpp-python is installed (without importing it: that takes a while)."""
    from importlib.util import find_spec

    return find_spec("llama_cpp") is not None


class LlamaEngine:
    """One GGUF model, loaded on first use, generating on a single worker thread."""

    def __init__(self, model_path: Path, options: EngineOptions) -> None:
        self.model_path = model_path
        self.options = options
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self._llama: Llama | None = None
        self._grammars: dict[str, LlamaGrammar] = {}
        # The cancel flag of the generation in progress, read by llama.cpp's abort callback so a
        # cancelled request stops mid-prompt instead of evaluating a long prompt to the end.
        self._current_cancel: threading.Event | None = None
        self._abort_callback: Any = None  # kept alive: llama.cpp holds only a C pointer to it

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
    ) -> AsyncIterator[str | PromptEvaluated | Generated]:
        """Generate from ``prompt``.

        Yields a :class:`PromptEvaluated` first, then the text pieces as they come, then a
        :class:`Generated`.

        Args:
            prompt: The whole prompt, chat template applied.
            max_tokens: The most tokens to generate (fewer when the context is nearly full).
            temperature: Sampling temperature; 0 is greedy.
            stop: Strings that end generation (not included in the text).
            json_schema: Constrain the output to JSON of this schema (a llama.cpp grammar).
            top_p: Nucleus sampling.
            seed: Overrides the engine's seed for this request.

        Raises:
            PromptTooLongError: The prompt does not fit the context window.
            ProviderError: The engine is not installed or the model cannot be loaded.

        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | PromptEvaluated | Generated | BaseException] = asyncio.Queue()
        cancelled = threading.Event()

        def put(item: str | PromptEvaluated | Generated | BaseException) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                put(
                    self._generate(
                        prompt,
                        max_tokens=max_tokens,
                        temperature=temperature,
                        stop=list(stop),
                        json_schema=json_schema,
                        top_p=top_p,
                        seed=self.options.seed if seed is None else seed,
                        emit=put,
                        cancelled=cancelled,
                    )
                )
            except BaseException as exc:  # handed to the event loop, re-raised there
                put(exc)

        self._executor.submit(work)
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if isinstance(item, Generated):
                    return
        finally:
            cancelled.set()

    def reset_cache(self) -> None:
        """Forget the evaluated prompt, so the next request evaluates its prompt in full (benchmarks)."""

        def reset() -> None:
            if self._llama is not None:
                self._llama.reset()

        self._executor.submit(reset).result()

    def close(self) -> None:
        """Free the model (after the requests in progress end)."""

        def free() -> None:
            if self._llama is not None:
                self._llama.close()
                self._llama = None

        self._executor.submit(free)
        self._executor.shutdown(wait=True)

    # -- on the worker thread ----------------------------------------------------------------

    def _generate(
        self,
        prompt: str,
        *,
        max_tokens: int,
        temperature: float,
        stop: list[str],
        json_schema: dict[str, Any] | None,
        top_p: float,
        seed: int,
        emit: Any,
        cancelled: threading.Event,
    ) -> Generated:
        llama = self._load()
        self._current_cancel = cancelled
        prompt_tokens = len(llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))
        room = self.options.context_window - prompt_tokens
        if room < 16:
            raise PromptTooLongError(prompt_tokens, self.options.context_window)
        emit(PromptEvaluated(prompt_tokens))
        grammar = self._grammar(json_schema) if json_schema is not None else None
        pieces: list[str] = []
        finish_reason = "stop"
        completion_tokens = 0
        stream = llama.create_completion(
            prompt,
            max_tokens=min(max_tokens, room),
            temperature=temperature,
            top_p=top_p,
            repeat_penalty=1.05,
            stop=stop or None,
            seed=seed,
            grammar=grammar,
            stream=True,
        )
        for chunk in stream:  # pyright: ignore[reportUnknownVariableType]
            choice: Any = chunk["choices"][0]  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType]
            completion_tokens += 1
            if text := choice.get("text"):
                pieces.append(text)
                emit(text)
            if choice.get("finish_reason"):
                finish_reason = str(choice["finish_reason"])
            if cancelled.is_set():
                finish_reason = "cancelled"
                break
        return Generated("".join(pieces), prompt_tokens, completion_tokens, finish_reason)

    def _load(self) -> Llama:
        if self._llama is not None:
            return self._llama
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ProviderError(
                "the local model engine (llama-cpp-python) is not installed", hint=INSTALL_HINT
            ) from None
        try:
            self._llama = Llama(
                model_path=str(self.model_path),
                n_ctx=self.options.context_window,
                n_threads=self.options.threads,
                n_threads_batch=self.options.threads,
                seed=self.options.seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderError(
                f"cannot load the local model {self.model_path}: {exc}",
                hint="check that the file is a complete GGUF model that llama.cpp supports",
            ) from None
        self._install_abort_callback(self._llama)
        # After loading, llama.cpp's remaining error lines are about aborted requests, which
        # nestor reports itself; they would only garble the terminal.
        logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL)
        return self._llama

    def _install_abort_callback(self, llama: Llama) -> None:
        """Let llama.cpp stop evaluating when the request in progress is cancelled."""
        import llama_cpp

        def should_abort(_data: Any) -> bool:
            cancel = self._current_cancel
            return cancel is not None and cancel.is_set()

        self._abort_callback = llama_cpp.ggml_abort_callback(should_abort)
        llama_cpp.llama_set_abort_callback(llama._ctx.ctx, self._abort_callback, ctypes.c_void_p())  # pyright: ignore[reportPrivateUsage]

    def _grammar(self, json_schema: dict[str, Any]) -> LlamaGrammar:
        from llama_cpp import LlamaGrammar

        key = json.dumps(json_schema, sort_keys=True)
        grammar = self._grammars.get(key)
        if grammar is None:
            grammar = LlamaGrammar.from_json_schema(key, verbose=False)
            self._grammars[key] = grammar
        return grammar

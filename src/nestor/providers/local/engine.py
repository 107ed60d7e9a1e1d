"""llama.cpp in process: one loaded GGUF model, generating on one worker thread.

llama.cpp's context is not thread-safe and holds the KV cache of the previous prompt, which is what
makes a conversation fast: each request only evaluates the tokens added since the last one. So one
engine owns one ``Llama`` and runs every request on its single worker thread, in order. Tokens are
handed to the event loop as they come; cancelling the consumer stops generation at the next token.

A request may name the start of its prompt that recurs from run to run (the system turn: the
instructions and tool schemas). The first time the engine meets such a prefix it evaluates it alone
and saves its KV cells to :mod:`~nestor.providers.local.prefix_cache`; a later process (or this
one, after another prompt filled the context) loads them instead of evaluating thousands of
tokens again. The rest of the prompt is evaluated on top, as after any kept prefix.

``OMP_WAIT_POLICY=PASSIVE`` is set (unless the user set it) before llama.cpp is loaded: with the
default busy-waiting, two threads next to another busy process collapse from ~15 to ~3 tokens/s.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nestor.core.errors import ProviderError
from nestor.providers.local.llama_context import (
    common_prefix,
    engine_version,
    find_infill_markers,
    restore,
    snapshot,
    tokenize,
)
from nestor.providers.local.prefix_cache import PrefixCache, model_identity, prefix_key
from nestor.providers.local.text_engine import (
    EngineOptions,
    Generated,
    InfillMarkers,
    PrefixUse,
    PromptEvaluated,
    PromptTooLongError,
)

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaGrammar

INSTALL_HINT = "install the embedded engine with: pip install 'nestor[local]'"


def missing_dependency(missing: ImportError) -> ProviderError:
    """The error for a package of the ``[local]`` extra (llama-cpp-python, jinja2, ...) that is missing."""
    name = (missing.name or "").split(".")[0]
    if name in ("", "llama_cpp"):
        return ProviderError("the local model engine (llama-cpp-python) is not installed", hint=INSTALL_HINT)
    return ProviderError(
        f"the local model needs the Python package {name!r}, which is not installed", hint=INSTALL_HINT
    )


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
        self._prefix_cache = (
            PrefixCache(options.prefix_cache_dir) if options.prefix_cache_dir is not None else None
        )
        self._model_identity = ""  # taken when the model is loaded: the file the state belongs to
        self.last_prefix: PrefixUse | None = None
        """What the last request with a stable prefix did with it."""

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
            stable_prefix: How many leading characters of ``prompt`` recur from run to run (the
                system turn). Their evaluated state is loaded from the prefix cache when the
                context does not already hold them, or evaluated and saved there; 0 for none.

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
                        stable_prefix=stable_prefix,
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

    async def infill_markers(self) -> InfillMarkers | None:
        """The model's fill-in-the-middle tokens, as llama.cpp finds them in its vocabulary.

        None when the model has none (it is not a code model trained to fill in). Loads the model.
        """
        future = self._executor.submit(lambda: find_infill_markers(self._load()))
        return await asyncio.wrap_future(future)

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
        stable_prefix: int,
        emit: Any,
        cancelled: threading.Event,
    ) -> Generated:
        llama = self._load()
        self._current_cancel = cancelled
        tokens = tokenize(llama, prompt)
        room = self.options.context_window - len(tokens)
        if room < 16:
            raise PromptTooLongError(len(tokens), self.options.context_window)
        evaluated = 0
        if 0 < stable_prefix < len(prompt) and self._prefix_cache is not None and self._model_identity:
            prefix = tokenize(llama, prompt[:stable_prefix])
            evaluated = self._use_prefix(llama, self._prefix_cache, tokens, prefix)
        # What llama-cpp-python's generate keeps of the context: the longest common prefix, less
        # the last prompt token when the whole prompt is there (its logits are needed again).
        reused = min(common_prefix(llama, tokens), len(tokens) - 1) - evaluated
        emit(PromptEvaluated(len(tokens), reused))
        grammar = self._grammar(json_schema) if json_schema is not None else None
        pieces: list[str] = []
        finish_reason = "stop"
        completion_tokens = 0
        stream = llama.create_completion(
            tokens,  # a token list: tokenized once, with at most one BOS
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
        return Generated("".join(pieces), len(tokens), completion_tokens, finish_reason)

    def _use_prefix(self, llama: Llama, cache: PrefixCache, tokens: list[int], prefix: list[int]) -> int:
        """Make the context hold ``prefix``: as it is, loaded from the cache, or evaluated and saved.

        Returns:
            How many tokens it evaluated.

        """
        if not prefix or len(prefix) >= len(tokens) or tokens[: len(prefix)] != prefix:
            # The prefix does not tokenize as the start of the prompt: no state of it can serve.
            return 0
        held = common_prefix(llama, prefix)
        if held == len(prefix):
            self.last_prefix = PrefixUse(len(prefix), "context")
            return 0
        key = prefix_key(
            model=self._model_identity,
            context_window=self.options.context_window,
            engine_version=engine_version(),
            tokens=prefix,
        )
        started = time.perf_counter()
        state = cache.load(key, prefix)
        if state is not None:
            if restore(llama, prefix, state):
                self.last_prefix = PrefixUse(len(prefix), "disk", time.perf_counter() - started)
                return 0
            cache.discard(key)
        # Evaluated alone, on top of what the context already holds of it; the request then
        # evaluates only the rest of its prompt.
        started = time.perf_counter()
        llama.n_tokens = held
        llama.eval(prefix[held:])
        evaluated_at = time.perf_counter()
        state = snapshot(llama)
        saved_bytes = cache.store(key, prefix, state) if state is not None else 0
        self.last_prefix = PrefixUse(
            len(prefix),
            "evaluated",
            evaluated_at - started,
            saved_bytes=saved_bytes,
            save_seconds=time.perf_counter() - evaluated_at,
        )
        return len(prefix) - held

    def _load(self) -> Llama:
        if self._llama is not None:
            return self._llama
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from llama_cpp import Llama
        except ImportError as missing:  # llama-cpp-python, or a package it needs (numpy, ...)
            raise missing_dependency(missing) from None
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
        with contextlib.suppress(OSError):
            self._model_identity = model_identity(self.model_path)
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
            # Unsorted: the grammar writes properties in the schema's order, so a call's name comes
            # before its arguments, as the model learnt calls and its chat template renders them.
            grammar = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
            self._grammars[key] = grammar
        return grammar

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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from nestor.core.errors import ProviderError
from nestor.providers.local.prefix_cache import PrefixCache, model_identity, prefix_key

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
    """The first item of every generation: the prompt fits, and its size in tokens.

    Attributes:
        prompt_tokens: Tokens of the prompt.
        reused_tokens: Of those, the tokens this request does not evaluate: kept in the context
            from the previous request, or loaded from the prefix cache.

    """

    prompt_tokens: int
    reused_tokens: int = 0


@dataclass(frozen=True, slots=True)
class InfillMarkers:
    """The special tokens with which a code model fills in the middle (FIM) between two texts.

    A fill-in-the-middle prompt is ``prefix + before + suffix + after + middle``; the model then
    writes what goes between ``before`` and ``after`` and ends with an end-of-generation token.
    """

    prefix: str
    suffix: str
    middle: str

    def prompt(self, before: str, after: str) -> str:
        """The prompt that asks for the text between ``before`` and ``after``."""
        return f"{self.prefix}{before}{self.suffix}{after}{self.middle}"


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
        prefix_cache_dir: Where the evaluated state of stable prompt prefixes is kept between
            runs (see :mod:`~nestor.providers.local.prefix_cache`); None keeps nothing.

    """

    context_window: int
    threads: int
    seed: int = 0
    prefix_cache_dir: Path | None = None


@dataclass(frozen=True, slots=True)
class PrefixUse:
    """What a request did with its stable prefix (benchmarks and tests read it).

    Attributes:
        tokens: The prefix's tokens.
        source: ``context`` (already evaluated there), ``disk`` (loaded from the prefix cache) or
            ``evaluated`` (then saved to the cache).
        seconds: Time spent loading or evaluating it (0 when the context held it).
        saved_bytes: The size of the state file written (0 when none was).
        save_seconds: Time spent reading the state out of llama.cpp and writing the file.

    """

    tokens: int
    source: Literal["context", "disk", "evaluated"]
    seconds: float = 0.0
    saved_bytes: int = 0
    save_seconds: float = 0.0


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
        stable_prefix: int = 0,
    ) -> AsyncIterator[str | PromptEvaluated | Generated]:
        """See :meth:`LlamaEngine.generate`."""
        ...

    async def infill_markers(self) -> InfillMarkers | None:
        """See :meth:`LlamaEngine.infill_markers`."""
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
        future = self._executor.submit(lambda: _infill_markers(self._load()))
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
        tokens = _tokenize(llama, prompt)
        room = self.options.context_window - len(tokens)
        if room < 16:
            raise PromptTooLongError(len(tokens), self.options.context_window)
        evaluated = 0
        if 0 < stable_prefix < len(prompt) and self._prefix_cache is not None and self._model_identity:
            prefix = _tokenize(llama, prompt[:stable_prefix])
            evaluated = self._use_prefix(llama, self._prefix_cache, tokens, prefix)
        # What llama-cpp-python's generate keeps of the context: the longest common prefix, less
        # the last prompt token when the whole prompt is there (its logits are needed again).
        reused = min(_common_prefix(llama, tokens), len(tokens) - 1) - evaluated
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
        held = _common_prefix(llama, prefix)
        if held == len(prefix):
            self.last_prefix = PrefixUse(len(prefix), "context")
            return 0
        key = prefix_key(
            model=self._model_identity,
            context_window=self.options.context_window,
            engine_version=_engine_version(),
            tokens=prefix,
        )
        started = time.perf_counter()
        state = cache.load(key, prefix)
        if state is not None:
            if _restore(llama, prefix, state):
                self.last_prefix = PrefixUse(len(prefix), "disk", time.perf_counter() - started)
                return 0
            cache.discard(key)
        # Evaluated alone, on top of what the context already holds of it; the request then
        # evaluates only the rest of its prompt.
        started = time.perf_counter()
        llama.n_tokens = held
        llama.eval(prefix[held:])
        evaluated_at = time.perf_counter()
        state = _snapshot(llama)
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


def _tokenize(llama: Llama, text: str) -> list[int]:
    """``text``'s tokens as llama-cpp-python would prompt them: BOS when the model wants one, once."""
    tokens = llama.tokenize(text.encode("utf-8"), add_bos=True, special=True)
    bos = llama.token_bos()
    if len(tokens) >= 2 and tokens[0] == tokens[1] == bos:
        del tokens[0]  # the chat template printed the BOS itself
    return tokens


def _infill_markers(llama: Llama) -> InfillMarkers | None:
    import llama_cpp

    api: Any = llama_cpp  # its ctypes declarations type token ids as c_int32; they come back as int
    vocabulary = api.llama_model_get_vocab(llama.model)
    tokens: list[int] = [
        int(api.llama_vocab_fim_pre(vocabulary)),
        int(api.llama_vocab_fim_suf(vocabulary)),
        int(api.llama_vocab_fim_mid(vocabulary)),
    ]
    if min(tokens) < 0:
        return None
    texts = [llama.detokenize([token], special=True).decode("utf-8", "replace") for token in tokens]
    # The prompt is tokenized as text: each marker must come back as its one special token.
    if any(_tokenize_special(llama, text) != [token] for text, token in zip(texts, tokens, strict=True)):
        return None
    return InfillMarkers(*texts)


def _tokenize_special(llama: Llama, text: str) -> list[int]:
    return llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)


def _common_prefix(llama: Llama, tokens: Sequence[int]) -> int:
    """How many of ``tokens`` the context holds already, from the start."""
    import numpy as np

    held = llama.input_ids[: llama.n_tokens]
    length = min(len(held), len(tokens))
    differ = np.flatnonzero(held[:length] != np.asarray(tokens[:length], dtype=held.dtype))
    return int(differ[0]) if differ.size else length


def _snapshot(llama: Llama) -> bytearray | None:
    """The KV cells of sequence 0 (the only one), as llama.cpp serialises them; None if it cannot."""
    import llama_cpp

    sequence = llama_cpp.llama_seq_id(0)
    size = llama_cpp.llama_state_seq_get_size(llama.ctx, sequence)
    if size <= 0:
        return None
    state = bytearray(size)
    buffer = (ctypes.c_uint8 * size).from_buffer(state)
    written = llama_cpp.llama_state_seq_get_data(llama.ctx, buffer, size, sequence)
    del buffer  # releases the export, so the bytearray may shrink
    if written <= 0:
        return None
    del state[written:]
    return state


def _restore(llama: Llama, prefix: list[int], state: bytearray) -> bool:
    """Replace the context with ``state``, the saved cells of ``prefix``; False if llama.cpp refuses it."""
    import llama_cpp

    memory = llama_cpp.llama_get_memory(llama.ctx)
    llama.n_tokens = 0
    if memory is not None:
        llama_cpp.llama_memory_clear(memory, True)
    buffer = (ctypes.c_uint8 * len(state)).from_buffer(state)
    if llama_cpp.llama_state_seq_set_data(llama.ctx, buffer, len(state), llama_cpp.llama_seq_id(0)) == 0:
        if memory is not None:
            llama_cpp.llama_memory_clear(memory, True)
        return False
    llama.input_ids[: len(prefix)] = prefix
    llama.n_tokens = len(prefix)
    return True


def _engine_version() -> str:
    import llama_cpp

    return str(llama_cpp.__version__)

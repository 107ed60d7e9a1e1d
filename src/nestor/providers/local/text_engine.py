"""``TextEngine``, what the local model needs of an engine: what a generation yields, its options and errors.

:class:`TextEngine` is what :class:`~nestor.providers.local.model.LocalModel` needs of an engine;
:class:`~nestor.providers.local.engine.LlamaEngine` is the real one, tests script their own.
Nothing here imports llama.cpp.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol


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

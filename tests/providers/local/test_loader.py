"""``local:PATH.gguf`` to a built, not yet loaded, local model: over synthetic GGUF headers."""

import os
from pathlib import Path

import pytest
from pydantic_ai.settings import ModelSettings

from nestor.core.errors import ProviderError
from nestor.providers.local.engine import LlamaEngine
from nestor.providers.local.loader import (
    DEFAULT_LOCAL_CONTEXT_WINDOW,
    SMALL_PROFILE_MAX_PARAMETERS,
    LocalBuild,
    build_local_model,
)
from nestor.providers.local.model import LocalModel
from tests.providers.local.gguf_writer import (
    CHAT_TOKENS,
    COMPACT_TENSORS,
    LARGE_TENSORS,
    Tensors,
    qwen_chat_template,
    write_chat_gguf,
)


def build(
    model_name: str,
    project_root: Path,
    *,
    context_window: int | None = None,
    threads: int | None = None,
    settings: ModelSettings | None = None,
) -> LocalBuild:
    return build_local_model(
        model_name,
        data_dir=project_root / "data",
        project_root=project_root,
        context_window=context_window,
        threads=threads,
        settings=settings or {},
    )


def engine_of(built: LocalBuild) -> LlamaEngine:
    engine = built.model.engine
    assert isinstance(engine, LlamaEngine)
    return engine


def test_an_absolute_path_builds_a_model_without_loading_it(tmp_path: Path) -> None:
    path = write_chat_gguf(tmp_path / "models" / "coder.gguf")

    built = build(str(path), tmp_path / "elsewhere", threads=3, settings={"temperature": 0.1})

    assert built.path == path
    assert isinstance(built.model, LocalModel)
    assert built.model.model_name == str(path)
    assert built.model.system == "local"
    assert built.model.settings == {"temperature": 0.1}
    engine = engine_of(built)
    assert engine.model_path == path
    assert engine.options.threads == 3
    assert engine.options.context_window == built.context_window
    assert engine.options.prefix_cache_dir == tmp_path / "elsewhere" / "data" / "cache" / "llama-state"
    # The chat template and its special tokens come from the header.
    template = built.model.template
    assert (template.bos_token, template.eos_token) == (CHAT_TOKENS[0], CHAT_TOKENS[2])
    prompt = template.render([{"role": "user", "content": "hi"}])
    assert prompt.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


def test_a_relative_path_starts_at_the_project_root(tmp_path: Path) -> None:
    path = write_chat_gguf(tmp_path / "project" / "models" / "coder.gguf")

    built = build("models/coder.gguf", tmp_path / "project")

    assert built.path == path
    assert built.model.model_name == "models/coder.gguf"


def test_threads_default_to_every_core(tmp_path: Path) -> None:
    built = build(str(write_chat_gguf(tmp_path / "m.gguf")), tmp_path)
    assert engine_of(built).options.threads == (os.cpu_count() or 1)


@pytest.mark.parametrize(
    ("configured", "trained", "window"),
    [
        (None, 32_768, DEFAULT_LOCAL_CONTEXT_WINDOW),
        (8_192, 32_768, 8_192),
        (65_536, 32_768, 32_768),  # never more than the model was trained for
        (None, 4_096, 4_096),
        (None, None, DEFAULT_LOCAL_CONTEXT_WINDOW),  # the header does not say: the default stands
    ],
)
def test_context_window_is_configured_or_default_capped_by_training(
    tmp_path: Path, configured: int | None, trained: int | None, window: int
) -> None:
    path = write_chat_gguf(tmp_path / "m.gguf", context_length=trained)

    built = build(str(path), tmp_path, context_window=configured)

    assert DEFAULT_LOCAL_CONTEXT_WINDOW == 16_384
    assert built.context_window == engine_of(built).options.context_window == window


@pytest.mark.parametrize(
    ("tensors", "small"),
    [
        (COMPACT_TENSORS, True),  # 1.5e9 parameters
        (LARGE_TENSORS, False),  # 8e9 parameters
        ([("w", [2, SMALL_PROFILE_MAX_PARAMETERS // 2])], True),  # exactly at the limit
        ([("w", [2, SMALL_PROFILE_MAX_PARAMETERS // 2]), ("b", [1])], False),  # one past it
    ],
)
def test_the_small_model_profile_follows_the_parameter_count(
    tmp_path: Path, tensors: Tensors, small: bool
) -> None:
    built = build(str(write_chat_gguf(tmp_path / "m.gguf", tensors)), tmp_path)

    assert built.small_profile is small
    # A small model is pushed to look with a tool before it answers.
    assert built.model.call_first is small


def test_a_header_without_tensors_gets_no_small_model_profile(tmp_path: Path) -> None:
    # An unknown size is not evidence of a small model.
    built = build(str(write_chat_gguf(tmp_path / "m.gguf", [])), tmp_path)
    assert (built.small_profile, built.model.call_first) == (False, False)


def test_a_missing_file_is_a_provider_error_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as caught:
        build("models/absent.gguf", tmp_path)

    error = caught.value
    assert error.message == f"no GGUF model file at {tmp_path / 'models' / 'absent.gguf'}"
    assert error.hint and "local:/path/to/model.gguf" in error.hint
    assert "\n" not in error.message and "\n" not in error.hint


def test_a_directory_is_not_a_model_file(tmp_path: Path) -> None:
    (tmp_path / "models.gguf").mkdir()
    with pytest.raises(ProviderError, match="no GGUF model file"):
        build("models.gguf", tmp_path)


def test_a_gguf_without_a_chat_template_is_a_provider_error(tmp_path: Path) -> None:
    path = write_chat_gguf(tmp_path / "base.gguf", chat_template="")

    with pytest.raises(ProviderError) as caught:
        build(str(path), tmp_path)

    error = caught.value
    assert str(path) in error.message and "tokenizer.chat_template" in error.message
    assert error.hint and "instruct" in error.hint
    assert "\n" not in error.message and "\n" not in error.hint


def test_a_file_that_is_not_gguf_is_a_provider_error(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_text(qwen_chat_template(), encoding="utf-8")

    with pytest.raises(ProviderError, match="not a GGUF"):
        build(str(path), tmp_path)

"""The embedded model is the default only when nothing else can run."""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.config.loading import load_settings
from nestor.config.sections import BUNDLED_LOCAL_MODEL
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError
from nestor.providers.defaults import model_for_role


def settings_in(tmp_path: Path, config: str = "") -> Settings:
    (tmp_path / "nestor.toml").write_text(config, encoding="utf-8")
    return load_settings(
        tmp_path, env={"HOME": str(tmp_path)}, user_config_path=tmp_path / "none.toml", trusted=True
    )


def test_a_configured_model_wins(tmp_path: Path) -> None:
    settings = settings_in(tmp_path, '[models]\nlarge = "anthropic:claude-sonnet-4-5"\n')
    assert model_for_role(settings, "small", {}) == (settings.model_for("small"), False)


def test_without_model_or_key_the_embedded_model_runs(tmp_path: Path) -> None:
    model_config, embedded = model_for_role(settings_in(tmp_path), "large", {"OLLAMA_API_KEY": "x"})
    assert (model_config.model, embedded) == (BUNDLED_LOCAL_MODEL, True)


def test_with_a_key_but_no_model_the_user_is_asked_to_choose(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no model configured"):
        model_for_role(settings_in(tmp_path), "large", {"OPENAI_API_KEY": "sk-test"})

from __future__ import annotations

from pathlib import Path

from nestor.config.sections import ModelConfig
from nestor.config.settings import Settings
from nestor.providers.models import ModelBuilder

ENV = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test"}


def test_thinking_on_a_model_without_a_reasoning_option_is_said_once(tmp_path: Path) -> None:
    notices: list[str] = []
    models = ModelBuilder(Settings(project_root=tmp_path, data_dir=tmp_path), notify=notices.append)

    models.build(ModelConfig(model="openai:gpt-4o-mini", thinking="high"), ENV)
    models.build(ModelConfig(model="openai:gpt-4o-mini", thinking="high"), ENV)

    assert notices == [
        "openai:gpt-4o-mini has no reasoning option, so thinking = 'high' is not applied to it; remove "
        "thinking from its [models] entry, or choose a reasoning model"
    ]


def test_reasoning_models_and_thinking_off_say_nothing(tmp_path: Path) -> None:
    notices: list[str] = []
    models = ModelBuilder(Settings(project_root=tmp_path, data_dir=tmp_path), notify=notices.append)

    models.build(ModelConfig(model="openai:o3-mini", thinking="high"), ENV)
    models.build(ModelConfig(model="anthropic:claude-sonnet-4-5", thinking=True), ENV)
    models.build(ModelConfig(model="openai:gpt-4o-mini", thinking=False), ENV)
    models.build(ModelConfig(model="openai:gpt-4o"), ENV)

    assert notices == []

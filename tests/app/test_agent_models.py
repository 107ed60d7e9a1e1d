from __future__ import annotations

from pathlib import Path

import pytest

from nestor.agents.spec import AgentSpec
from nestor.app.agent_models import agent_model_problems, model_problem
from nestor.config.settings import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(project_root=tmp_path, data_dir=tmp_path)


@pytest.mark.parametrize("model", ["inherit", "large", "small", "sonnet", "fast", "openai:gpt-4o", "local:x"])
def test_models_that_can_run_have_no_problem(settings: Settings, model: str) -> None:
    assert model_problem(model, settings, {"OPENAI_API_KEY": "sk"}) is None


def test_an_unknown_provider_or_form_is_an_error_and_a_missing_key_a_warning(settings: Settings) -> None:
    unknown = model_problem("notaprovider:zzz", settings, {})
    assert unknown is not None and unknown[0] == "error"
    assert "unknown provider 'notaprovider'" in unknown[1] and "anthropic" in unknown[1]
    nonsense = model_problem("gpt4", settings, {})
    assert nonsense is not None and nonsense[0] == "error" and "unknown model 'gpt4'" in nonsense[1]
    keyless = model_problem("openai:gpt-4o", settings, {})
    assert keyless == (
        "warning",
        "'openai:gpt-4o': openai has no credentials here (OPENAI_API_KEY is not set), so a task using this "
        "agent fails until it is",
    )


def test_each_problem_is_on_its_files_model_line(settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "m3.md"
    path.write_text("---\nname: m3\ndescription: d\nmodel: notaprovider:zzz\n---\nmodel: in the body\n")
    specs = [
        AgentSpec("m3", "d", "p", model="notaprovider:zzz", source="project", path=path),
        AgentSpec("built", "d", "p", model="notaprovider:zzz", source="builtin"),
    ]
    [problem] = agent_model_problems(specs, settings, {})
    assert (problem.path, problem.line, problem.key, problem.severity) == (path, 4, "model", "error")

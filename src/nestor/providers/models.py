"""The models of one process: a role or ``provider:model`` to a built model, each built once.

A local model is loaded in memory only once however many agents use it; the notice that the
embedded model was chosen (no model configured, no API key set) is given once, and so is the one
that a model has no reasoning option for its ``thinking`` setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from nestor.config.sections import ModelConfig, ModelRole
from nestor.config.settings import Settings
from nestor.providers.build import BuiltModel, build_model
from nestor.providers.defaults import model_for_role


class ModelBuilder:
    """Builds and keeps the models of one process.

    Attributes:
        notify: Shows the user a one-line notice (the embedded model was chosen, long first-use
            work such as loading a local model).

    """

    def __init__(self, settings: Settings, *, notify: Callable[[str], None] = lambda _message: None) -> None:
        self._settings = settings
        self.notify = notify
        self._built: dict[str, BuiltModel] = {}
        self._embedded_notice_given = False

    def config(self, role: ModelRole, env: Mapping[str, str]) -> ModelConfig:
        """The model of ``role``: the configured one, else (no API key set) the embedded local model.

        Raises:
            ConfigError: No model is configured and the embedded model is not installed, or some
                provider has a key (then the user should say which model to use).

        """
        model_config, embedded = model_for_role(self._settings, role, env)
        if embedded and not self._embedded_notice_given:
            self._embedded_notice_given = True
            self.notify(
                "no model configured and no API key set: using the embedded local model "
                f"({model_config.model}); set NESTOR_MODEL=provider:model for a stronger one"
            )
        return model_config

    def build(self, model_config: ModelConfig, env: Mapping[str, str]) -> BuiltModel:
        """Build a model once per process: a local model is loaded in memory only once.

        A ``thinking`` setting the model cannot apply is named once, when it is built.
        """
        key = model_config.model_dump_json()
        built = self._built.get(key)
        if built is None:
            built = build_model(model_config, self._settings, env=env, on_progress=self.notify)
            self._built[key] = built
            notice = thinking_not_applied(built, model_config)
            if notice is not None:
                self.notify(notice)
        return built

    def choose(self, choice: str, env: Mapping[str, str]) -> BuiltModel:
        """The model of a role (``large``, ``small``) or of ``provider:model``."""
        if choice in ("large", "small"):
            return self.build(self.config(choice, env), env)
        return self.build(ModelConfig(model=choice), env)


def thinking_not_applied(built: BuiltModel, model_config: ModelConfig) -> str | None:
    """The notice that ``built`` has no reasoning option for the configured ``thinking``, or None.

    pydantic-ai drops ``thinking`` for a model whose profile supports none (``openai:gpt-4o-mini``),
    with no word to anyone; ``thinking = false`` asks for nothing, so it is never named.
    """
    if not model_config.thinking:
        return None
    profile = built.model.profile
    if profile.get("supports_thinking", False) or profile.get("thinking_always_enabled", False):
        return None
    return (
        f"{built.name} has no reasoning option, so thinking = {model_config.thinking!r} is not applied "
        "to it; remove thinking from its [models] entry, or choose a reasoning model"
    )

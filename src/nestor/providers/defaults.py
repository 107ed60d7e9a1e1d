"""Which model a role uses when the configuration names none: the embedded one, if nothing else can.

A configured model always wins. With none configured, nestor runs the bundled local model, but
only when no provider key is set (a user with a key should say which model to use, and is told
how) and the embedded engine is installed (``pip install 'nestor[local]'``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from nestor.config.sections import BUNDLED_LOCAL_MODEL, ModelConfig, ModelRole
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError
from nestor.providers.catalogue import keyed_providers
from nestor.providers.local.engine import engine_available


def model_for_role(
    settings: Settings, role: ModelRole, env: Mapping[str, str] = os.environ
) -> tuple[ModelConfig, bool]:
    """Return the model of ``role`` and whether it is the embedded default rather than configured.

    Raises:
        ConfigError: No model is configured, and a provider key is set or the engine is missing.

    """
    try:
        return settings.model_for(role), False
    except ConfigError:
        if keyed_providers(env) or not engine_available():
            raise
    return ModelConfig(model=BUNDLED_LOCAL_MODEL), True

"""Settings: where the data lives and the defaults of the reports.

Settings come from, in increasing priority: the defaults below, the ``[stockroom]`` section of
``stockroom.ini`` in the data directory, and explicit arguments to :func:`load_settings`.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError

DEFAULT_DATA_DIR = Path("~/.stockroom")
"""Where the inventory is kept when neither ``--data-dir`` nor ``STOCKROOM_HOME`` says otherwise."""

HOME_ENV_VAR = "STOCKROOM_HOME"
"""Environment variable that overrides the data directory."""

DATA_FILE_NAME = "inventory.json"
SETTINGS_FILE_NAME = "stockroom.ini"

DEFAULT_LOW_STOCK_THRESHOLD = 5
DEFAULT_CURRENCY = "EUR"
SUPPORTED_CURRENCIES = ("EUR", "USD", "GBP", "CHF")


@dataclass(frozen=True)
class Settings:
    """The effective settings of one run."""

    data_dir: Path
    low_stock_threshold: int = DEFAULT_LOW_STOCK_THRESHOLD
    currency: str = DEFAULT_CURRENCY

    @property
    def data_file(self) -> Path:
        """The JSON file holding the inventory."""
        return self.data_dir / DATA_FILE_NAME


def resolve_data_dir(data_dir: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The data directory: ``data_dir`` if given, else ``$STOCKROOM_HOME``, else the default."""
    environ = os.environ if environ is None else environ
    if data_dir is not None:
        chosen = Path(data_dir)
    elif environ.get(HOME_ENV_VAR):
        chosen = Path(environ[HOME_ENV_VAR])
    else:
        chosen = DEFAULT_DATA_DIR
    return chosen.expanduser()


def load_settings(data_dir: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Read the settings for the data directory (see :func:`resolve_data_dir`).

    Raises:
        ConfigError: ``stockroom.ini`` cannot be parsed or holds an invalid value.

    """
    directory = resolve_data_dir(data_dir, environ)
    parser = configparser.ConfigParser()
    path = directory / SETTINGS_FILE_NAME
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    section = parser["stockroom"] if parser.has_section("stockroom") else {}

    try:
        threshold = int(section.get("low_stock_threshold", DEFAULT_LOW_STOCK_THRESHOLD))
    except ValueError:
        raise ConfigError(f"{path}: low_stock_threshold must be a whole number") from None
    if threshold < 0:
        raise ConfigError(f"{path}: low_stock_threshold cannot be negative")

    currency = str(section.get("currency", DEFAULT_CURRENCY)).upper()
    if currency not in SUPPORTED_CURRENCIES:
        raise ConfigError(f"{path}: unsupported currency {currency!r}")

    return Settings(data_dir=directory, low_stock_threshold=threshold, currency=currency)

from pathlib import Path

import pytest

from stockroom.config import DEFAULT_CURRENCY, DEFAULT_LOW_STOCK_THRESHOLD, load_settings, resolve_data_dir
from stockroom.errors import ConfigError


def test_resolve_data_dir_prefers_argument():
    assert resolve_data_dir("/srv/stock", environ={"STOCKROOM_HOME": "/elsewhere"}) == Path("/srv/stock")


def test_resolve_data_dir_uses_environment():
    assert resolve_data_dir(environ={"STOCKROOM_HOME": "/srv/stock"}) == Path("/srv/stock")


def test_resolve_data_dir_default():
    assert resolve_data_dir(environ={}) == Path("~/.stockroom").expanduser()


def test_defaults_without_settings_file(tmp_path):
    settings = load_settings(tmp_path)
    assert settings.low_stock_threshold == DEFAULT_LOW_STOCK_THRESHOLD
    assert settings.currency == DEFAULT_CURRENCY
    assert settings.data_file == tmp_path / "inventory.json"


def test_settings_file_overrides_defaults(tmp_path):
    (tmp_path / "stockroom.ini").write_text("[stockroom]\nlow_stock_threshold = 3\ncurrency = usd\n")
    settings = load_settings(tmp_path)
    assert settings.low_stock_threshold == 3
    assert settings.currency == "USD"


@pytest.mark.parametrize(
    "body", ["low_stock_threshold = many", "low_stock_threshold = -1", "currency = XYZ", "no section header"]
)
def test_invalid_settings_file(tmp_path, body):
    text = body if body == "no section header" else f"[stockroom]\n{body}\n"
    (tmp_path / "stockroom.ini").write_text(text)
    with pytest.raises(ConfigError):
        load_settings(tmp_path)

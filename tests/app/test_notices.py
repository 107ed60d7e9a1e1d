from __future__ import annotations

from pathlib import Path

from nestor.app.notices import ignored_settings_notices
from nestor.config.settings import IgnoredSetting, Settings


def _notices(tmp_path: Path, *ignored: IgnoredSetting) -> list[str]:
    settings = Settings(project_root=tmp_path, data_dir=tmp_path, project_trusted=False, ignored=ignored)
    return ignored_settings_notices(settings, [])


def test_one_ignored_setting_is_singular_and_several_are_plural(tmp_path: Path) -> None:
    [one] = _notices(tmp_path, IgnoredSetting(".mcp.json server ptime", "untrusted"))
    assert "so its setting that would widen what nestor may do or where data goes was ignored (" in one
    [two] = _notices(
        tmp_path, IgnoredSetting(".mcp.json server ptime", "untrusted"), IgnoredSetting("models", "untrusted")
    )
    assert "so its settings that would widen what nestor may do or where data goes were ignored (" in two


def test_every_other_reason_agrees_with_its_count(tmp_path: Path) -> None:
    for reason in ("user provider", "user key", "user server"):
        [one] = _notices(tmp_path, IgnoredSetting("a", reason))
        [two] = _notices(tmp_path, IgnoredSetting("a", reason), IgnoredSetting("b", reason))
        assert one.endswith("so a was ignored") and two.endswith("so a, b were ignored"), (one, two)

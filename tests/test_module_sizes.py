"""Module sizes: an alarm, not the rule. The rule is the map's (docs/architecture.md, "Modules"):
one responsibility per module, named for it, split by responsibility and never to fit a size.

A module past :data:`ALARM_LINES` has almost surely grown a second responsibility; the alarm asks
whoever passes it to find the seam, not to cut the file where it happens to be long.
"""

from __future__ import annotations

from pathlib import Path

import nestor

ALARM_LINES = 600

SOURCE = Path(nestor.__file__).parent
MAP = SOURCE.parent.parent / "docs" / "architecture.md"


def test_no_module_of_src_has_grown_past_the_alarm() -> None:
    sizes = {
        path.relative_to(SOURCE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(SOURCE.rglob("*.py"))
    }
    over = {name: lines for name, lines in sizes.items() if lines > ALARM_LINES}
    assert not over, (
        f"modules over {ALARM_LINES} lines: find the second responsibility each holds and give it a "
        f"module named for it (docs/architecture.md, 'Modules'): {over}"
    )


def test_the_map_states_the_rule_the_alarm_serves() -> None:
    text = MAP.read_text(encoding="utf-8")
    assert "## Modules: one responsibility each" in text
    assert f"{ALARM_LINES} lines" in text

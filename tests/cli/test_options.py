from __future__ import annotations

from nestor.cli.options import CommonOptions


def test_a_zero_limit_flag_is_given_not_dropped() -> None:
    # --max-tokens 0 and --max-time 0 mean "no limit": they must reach the settings over a config's limit.
    merged = CommonOptions.merge(CommonOptions(yolo=True), max_tokens=0, max_time_s=0.0, yolo=False)
    assert (merged.max_tokens, merged.max_time_s, merged.yolo) == (0, 0.0, True)

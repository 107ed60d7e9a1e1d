from __future__ import annotations

from nestor.checkpoints.undo import PlannedFile, UndoPlan
from nestor.cli.undo_cmd import plan_lines


def test_a_file_name_with_a_newline_is_listed_on_one_line_escaped() -> None:
    plan = UndoPlan(
        "prompt 1 (go)",
        (
            PlannedFile("a\ncreate   important.txt", "delete", "binary"),
            PlannedFile("keep.txt", "create", ""),
        ),
    )

    lines = plan_lines(plan, diffs=False)

    assert lines == [
        "undo prompt 1 (go): 2 files",
        "  delete   a\\ncreate   important.txt",
        "  create   keep.txt",
    ]

"""Planning the statements cut out of a suspect function, and reading what the model filled in."""

from nestor.runtime.features.small.acting.infill import Gap, candidates, gaps, parses
from nestor.runtime.features.small.gathering.functions import FunctionSpan

SOURCE = '''import math


def area(shapes, scale=1):
    """The total area of ``shapes``."""
    total = 0
    for shape in shapes:
        total += shape.width * (
            shape.height
        )
    if total < 0:
        raise ValueError("negative")
    return total * scale
'''

AREA = FunctionSpan("geometry.py", "area", 4, 13)


def test_each_statement_is_a_gap_and_the_lines_a_traceback_names_come_first() -> None:
    found = gaps(SOURCE, AREA, first_lines=[12])
    assert [(gap.first, gap.last) for gap in found] == [
        (12, 12),  # the raise the traceback named
        (11, 11),  # the if header above it: nearest, and what decides the raise
        (13, 13),  # below it
        (9, 9),  # (not the closing bracket alone)
        (8, 8),  # a statement over three lines is cut line by line
        (7, 7),  # the for header (one line)
        (6, 6),  # total = 0
    ]
    # The docstring and the def line are never cut.
    assert all(gap.first > 5 for gap in found)
    # Without a traceback line in the function (a wrong result): its condition first, then in
    # order. Found blind on toolz: merge_sorted's `key2 < key1` became `<=`, the 14th line of 20.
    assert [gap.first for gap in gaps(SOURCE, AREA)] == [11, 6, 7, 8, 9, 12, 13]


def test_the_lines_the_failing_test_did_not_run_are_not_cut() -> None:
    # Found blind on toolz: the wrong line of update_in was the 15th of 16 to be tried, after 10.
    ran = {6, 7, 8, 9, 13}.__contains__
    assert [gap.first for gap in gaps(SOURCE, AREA, ran=ran)] == [6, 7, 8, 9, 13]


def test_a_gaps_context_is_the_function_and_its_surroundings_without_the_cut_lines() -> None:
    gap = Gap(AREA, 11, 11)
    before, after = gap.context(SOURCE)
    assert before.startswith("import math") and before.endswith("        )\n")
    assert after == '        raise ValueError("negative")\n    return total * scale\n'
    assert gap.cut(SOURCE) == "    if total < 0:\n"
    filled = gap.filled(SOURCE, "    if total <= 0:\n")
    assert filled.startswith("def area(") and "    if total <= 0:\n" in filled and "total < 0" not in filled


def test_candidates_are_the_first_lines_the_model_wrote_each_new() -> None:
    cut = "    units, rest = divmod(cents, 100)\n"
    # As the 1.5B model fills this gap: the fix takes three lines, and it goes on past the gap.
    middle = "    cents = abs(cents)\n    units = cents // 100\n\n    rest = cents % 100\n    symbol = 'x'\n"
    assert candidates(middle, cut) == [
        "    cents = abs(cents)\n",
        "    cents = abs(cents)\n    units = cents // 100\n",
        "    cents = abs(cents)\n    units = cents // 100\n    rest = cents % 100\n",
    ]
    # The same statement again is no candidate; a first line without its indent gets the gap's.
    assert candidates("units, rest  = divmod(cents, 100)\n", cut) == []
    assert candidates("return None", cut) == ["    return None\n"]


def test_parses() -> None:
    assert parses(SOURCE)
    assert not parses(SOURCE.replace("if total < 0:", "if total < 0"))


def test_try_is_not_cut_but_what_it_holds_is() -> None:
    source = "\n".join(
        [
            "def pop(d):",
            "    try:",
            "        key = next(iter(d))",
            "    except StopIteration:",
            "        raise KeyError",
            "",
        ]
    )
    found = gaps(source, FunctionSpan("m.py", "pop", 1, 5))
    assert [(gap.first, gap.last) for gap in found] == [(3, 3), (5, 5)]

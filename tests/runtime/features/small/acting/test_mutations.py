"""The one-token repairs tried on a suspect line: the commonest kinds, and only in code."""

from nestor.runtime.features.small.acting.mutations import MAX_MUTANTS, mutants


def test_a_return_off_by_one_and_a_comparison_are_among_the_first_changes() -> None:
    line = "    if (code !== 0x20 && code !== 0x09) return index;\n"

    found = mutants(line, "javascript")

    assert "    if (code !== 0x20 && code !== 0x09) return index + 1;\n" in found
    assert found[0] == "    if (code === 0x20 && code !== 0x09) return index;\n"
    assert "    if (code !== 0x20 || code !== 0x09) return index;\n" in found
    assert all(changed.endswith("\n") for changed in found) and len(found) <= MAX_MUTANTS


def test_python_conditions_lose_or_gain_their_equals_and_their_off_by_one() -> None:
    found = mutants("    while i < len(items) - 1 and not done:\n", "python")

    assert found[0] == "    while i <= len(items) - 1 and not done:\n"
    assert "    while i < len(items) and not done:\n" in found
    assert "    while i < len(items) - 1 or not done:\n" in found
    assert "    while i < len(items) - 1 and done:\n" in found


def test_strings_and_comments_are_never_changed() -> None:
    assert mutants('  if (x < y) s = "a < b"; // when i < 2\n', "javascript") == [
        '  if (x <= y) s = "a < b"; // when i < 2\n',
        '  if (x > y) s = "a < b"; // when i < 2\n',
    ]
    # Python's // is division, not a comment; its # is one.
    assert mutants("    half = n // 2  # n > 0\n", "python") == [
        "    half = n // 3  # n > 0\n",
        "    half = n // 1  # n > 0\n",
    ]


def test_arrows_shifts_hex_and_macros_are_not_read_as_operators() -> None:
    assert mutants("const f = (a) => a << 10;\n", "javascript") == [
        "const f = (a) => a << 11;\n",
        "const f = (a) => a << 9;\n",
    ]
    assert mutants('    println!("{}", 0x20);\n', "rust") == []


def test_a_comparison_turned_round_is_tried_after_its_equals_slips() -> None:
    # Found on the semver crate: `<2.0.0` matched 3.0.0 because `ver.major < cmp.major` read `>`.
    found = mutants("        return ver.major > cmp.major;\n", "rust")

    assert found[:2] == [
        "        return ver.major >= cmp.major;\n",
        "        return ver.major < cmp.major;\n",
    ]

"""Text tree-sitter-bash leaves unparsed where bash expands it: the line is never judged as harmless.

A differential: each line is run in real bash with a marker command hidden in it (``touch M``),
and whenever bash runs the marker, the parser must report it or mark the line unjudgeable.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nestor.permissions.bash_commands import parse_command_line
from nestor.permissions.bash_unparsed import UNPARSED, text_reasons
from tests.permissions.bash_support import decide

# Values that run the marker wherever bash evaluates them: as arithmetic (v), as a prompt (p).
PREFIX = "v='a[$(touch M)]'; p='$(touch M)'; u=abc; a=(1); w=v; "
PAYLOADS = [
    "`touch M`",
    "`touch M;`",
    "$(touch M)",
    "$( touch M )",
    '"$(touch M)"',
    '"`touch M`"',
    "$(echo `touch M`)",
    "`echo \\`touch M\\``",
    "$((v))",
    "$(($(touch M)))",
    "$[v]",
    "${a[v]}",
    "${a[$(touch M)]}",
    "${#a[v]}",
    "${a[@]:v}",
    "${u:v}",
    "${p@P}",
    "${!v}",
    "<(touch M)",
    ">(touch M)",
]
# A word holding the payload (%s): operands of every kind of parameter expansion, nested, quoted.
OPERANDS = [
    "${x-%s}",
    "${x:-%s}",
    "${u+%s}",
    "${u:+%s}",
    "${x=%s}",
    "${x:=%s}",
    "${u#%s}",
    "${u##%s}",
    "${u%%%s}",
    "${u/%s/y}",
    "${u//a/%s}",
    "${u/#%s}",
    "${u^^%s}",
    "${u,%s}",
    "${u:0:%s}",
    '"${x-%s}"',
    '"a${x:-%s}b"',
    "a${x-%s}b",
    '${x-"%s"}',
    "${x-a %s b}",
    "${x-'a'%s}",
    "${x-#%s}",
    "${x-a\\ %s}",
    "${x:-\n%s}",
    "${x-a\\\n%s}",
    "${x-}%s",
    '"$(echo ${x-%s})"',
    '$"${x-%s}"',
    "${a[${x-%s}]}",
    '${u/a/"%s"}',
]
# Where the word goes: a statement, or a here-document's body.
FRAMES = [
    ": %s",
    "echo %s >/dev/null",
    "y=%s",
    "export y=%s",
    "declare y=%s",
    "for i in %s; do :; done",
    "case %s in *) ;; esac",
    "case a in %s) ;; esac",
    "[[ a == %s ]]",
    "[[ -n %s ]]",
    "a=(%s)",
    "cat <<< %s",
    "printf -v y %s",
    "echo %s | cat",
    "bash -c 'echo %s'",
    "cat <<E\n%s\nE",
    "cat <<E\n a %s b\nE",
    "cat <<-E\n\t%s\n\tE",
    "cat <<-E\n%s\nE",
    "cat <<-E\n\t\t a\t%s\n\tE",
    "cat <<E >/dev/null\n%s\nE",
    "cat <<E | cat\n%s\nE",
    "{ cat; } <<E\n%s\nE",
    "while read l; do :; done <<E\n%s\nE",
    'echo "$(cat <<E\n%s\nE\n)"',
    "cat <<E\n\\\n%s\nE",
    "cat <<E\n%s\n%s\nE",
]


def _fill(template: str, payload: str) -> str:
    return template % ((payload,) * template.count("%s"))


@st.composite
def hidden_markers(draw: st.DrawFn) -> str:
    """A line with the marker command hidden in a payload, wrapped in operands, in a frame."""
    payload = draw(st.sampled_from(PAYLOADS))
    for _ in range(draw(st.integers(0, 3))):
        payload = _fill(draw(st.sampled_from(OPERANDS)), payload)
    return PREFIX + _fill(draw(st.sampled_from(FRAMES)), payload)


def runs_marker(line: str) -> bool:
    """Whether bash, running ``line`` in an empty folder, runs ``touch M``."""
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            ["bash", "-c", line], cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, timeout=10
        )
        return (Path(folder) / "M").exists()


def sees_marker(line: str) -> bool:
    """Whether the parser reports ``touch M`` among the line's commands, or does not judge the line."""
    parsed = parse_command_line(line)
    return bool(parsed.unresolved) or any(command.text.startswith("touch") for command in parsed.commands)


@settings(max_examples=400, deadline=None)
@given(hidden_markers())
def test_fuzz_a_command_bash_runs_is_seen_or_the_line_is_not_judged(line: str) -> None:
    if runs_marker(line):
        assert sees_marker(line), line


# The red team's shapes (G3) and the differential's findings, each checked against bash.
HIDDEN = [
    "ls ${x-`touch M`}",
    'ls "${x:-`touch M`}"',
    "cat <<E\n`touch M`\nE",
    "cat <<E\n${x-`touch M`}\nE",
    "cat <<-E\n\t$(touch M)\n\tE",
    "y='a[$(touch M)]'; cat <<-E\n\t$((y))\n\tE",
    "for i in ${x-`touch M`}; do :; done",
    "y='a[$(touch M)]'; ls ${x-$[y]}",
    "y='a[$(touch M)]'; u=b; echo ${u/${!y}/c}",
    "echo ${x-<(touch M)}",
    'u=abc; echo "${u#<(touch M)}"',
    "echo `echo \\`touch M\\``",
    'echo "`echo \\"\'\\$(touch M)\'\\"`"',
    "y='a[$(touch M)]'; a=(1); u=b; cat <<E\n${u%${a[y]}}\nE",
]


@pytest.mark.parametrize("line", HIDDEN)
def test_a_command_hidden_from_the_grammar_is_seen_or_the_line_is_not_judged(line: str) -> None:
    assert runs_marker(line), line
    assert sees_marker(line), line
    assert decide(line, allow=("bash(ls *)", "bash(cat *)", "bash(echo *)", "bash(for *)")) != "allow"
    assert decide(line, allow=("bash",), deny=("bash(touch *)",), yolo=True) == "deny"


def test_a_nested_backquoted_command_is_parsed_as_bash_reads_it() -> None:
    texts = [command.text for command in parse_command_line("echo `echo \\`rm -f x\\``").commands]
    assert "rm -f x" in texts
    assert decide("echo `echo \\`rm -f x\\``", allow=("bash",), deny=("bash(rm *)",)) == "deny"


@pytest.mark.parametrize(
    "line",
    [
        "git commit -m \"$(cat <<'EOF'\nFix `parse` and $(this) <(that)\nEOF\n)\"",
        "cat <<'EOF'\n`touch M` $(touch M)\nEOF",
        "cat <<\\EOF\n`touch M`\nEOF",
        "cat <<EOF\nhello $USER ${HOME}/x \\`not run\\` \\$(not run)\nEOF",
        "cat <<-EOF\n\thello ${USER:-someone}\n\tEOF",
        'echo "${HOME}/x" ${dir:-.} ${x/a/b} ${x#*/} "a <(b)"',
        "echo '${x-`touch M`}'",
    ],
)
def test_text_bash_does_not_expand_is_still_judged(line: str) -> None:
    assert not runs_marker(line)
    assert not parse_command_line(line).unresolved, line


def test_text_is_read_as_bash_reads_it() -> None:
    assert text_reasons("a `b` c", quoted=True) == [UNPARSED]
    assert text_reasons("a \\`b\\` \\$(c) \\\\", quoted=False) == []
    assert text_reasons("<(a)", quoted=True) == []
    assert text_reasons("${x-<(a)}", quoted=True) == [UNPARSED]
    assert text_reasons("${x@P}", quoted=False) != []
    assert text_reasons("${x-${y}}", quoted=False) == []
    assert text_reasons("${x-", quoted=False) != []

"""Shell words: the tilde prefixes bash expands in a static word."""

from __future__ import annotations

import subprocess

import pytest
import tree_sitter
import tree_sitter_bash

from nestor.permissions.bash_words import tilde_prefixes


def prefixes(word: str) -> list[tuple[int, str]]:
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    tree = parser.parse(f"echo {word}".encode())
    command = tree.root_node.named_children[0]
    return tilde_prefixes(command.named_children[-1])


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("~", [(0, "~")]),
        ("~/x", [(0, "~")]),
        ("~root/x", [(0, "~root")]),
        ("~+/x", [(0, "~+")]),
        ("~-", [(0, "~-")]),
        ("~+0/x", [(0, "~+0")]),
        ("a=~+/x", [(2, "~+")]),
        ("a=x:~-/y:~", [(4, "~-"), (9, "~")]),
        ("a[1]+=~/x", [(6, "~")]),
        ("'~+'/x", []),
        ('~"+"/x', []),
        ('~+"/x"', []),
        ("\\~/x", []),
        ("~+\\/x", []),
        ("x~/y", []),
        ("1a=~/x", []),
        ('"a"=~/x', []),
        ("~$u/x", []),  # not static: not known before it runs anyway
    ],
)
def test_the_tilde_prefixes_bash_expands(word: str, expected: list[tuple[int, str]]) -> None:
    assert prefixes(word) == expected


@pytest.mark.parametrize("word", ["~+/x", "a=~+/x", "a=x:~+/y", "'~+'/x", '~"+"/x', "\\~+/x", "1a=~+/x"])
def test_bash_expands_exactly_those(word: str) -> None:
    done = subprocess.run(["bash", "-c", f"echo {word}"], cwd="/", capture_output=True, text=True, check=True)
    assert ("~" not in done.stdout) == bool(prefixes(word)), done.stdout

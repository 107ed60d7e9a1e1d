"""Shell builtins that run code their words only name: they make a command line unjudgeable.

``eval``, ``trap`` and ``fc`` run a string; ``source`` and ``.`` a file; ``alias``, ``enable`` and
``hash -p`` define what a later name runs; ``let``, ``declare -i`` (whose assignments are
arithmetic) and ``declare -n`` (a name held in a variable) evaluate expressions; ``mapfile -C``
and ``compgen -C`` run a command they are given. Builtins that take a variable's name
(``read``, ``printf -v``, ``unset``, ``getopts``, ``wait -p``, ``mapfile``, ``test -v``,
``declare``) evaluate the subscript of ``a[$(rm x)]``, so such a name must be a plain one; and a
name from :mod:`.variables` (``read PATH``) changes what commands run.
"""

from __future__ import annotations

import re

from nestor.permissions.bash_expansions import safe_subscript
from nestor.permissions.bash_words import Word
from nestor.permissions.variables import variable_problem

_STRING_EVALUATORS = frozenset({"eval", "trap", "fc"})
_COMMAND_DEFINERS = frozenset({"alias", "enable"})
_DECLARATIONS = frozenset({"declare", "typeset", "local", "export", "readonly"})
_NAME = re.compile(r"([A-Za-z_]\w*)(?:\[(.*)\])?", re.DOTALL)
# Each builtin's options that take a value (bash's own getopt: clusters, attached values).
_VALUE_OPTIONS = {
    "read": "adinNptu",
    "mapfile": "dunOCcs",
    "readarray": "dunOCcs",
    "printf": "v",
    "wait": "p",
}
# The option whose value is a variable's name: read -a NAME, printf -v NAME, wait -p NAME.
_NAME_OPTIONS = {"read": "a", "printf": "v", "wait": "p"}


def builtin_reason(words: list[Word]) -> str:
    """Why the builtin ``words`` names runs or evaluates code no rule sees, or ""."""
    name, args = words[0].text, words[1:]
    if name in _STRING_EVALUATORS:
        return f"{name} runs a string"
    if name in ("source", "."):
        return f"{name} runs the commands of a file"
    if name == "let":
        return "let evaluates arithmetic, which can run commands"
    if name in _COMMAND_DEFINERS or (name == "hash" and _has_option(args, "p")):
        return f"{name} defines what a command name runs"
    if name in _DECLARATIONS:
        return _declaration_reason(name, args)
    if name == "compgen" and (_has_option(args, "C") or _has_option(args, "F")):
        return "compgen -C runs the command it is given"
    if name in ("test", "["):
        named = [args[index + 1] for index, word in enumerate(args[:-1]) if word.text == "-v"]
        return next((reason for word in named if (reason := name_reason(word))), "")
    if name in _VALUE_OPTIONS or name in ("unset", "getopts"):
        return _named_variables_reason(name, args)
    return ""


def name_reason(word: Word) -> str:
    """Why a word a builtin takes as a variable's name evaluates code, or "" for a plain name."""
    if not word.static:
        return f"a builtin is given the variable name {word.text}, which is not known before it runs"
    match = _NAME.fullmatch(word.text)
    if match is None:
        return ""  # not a name: bash refuses it
    if match.group(2) is not None and not safe_subscript(match.group(2)):
        return "an array subscript is evaluated as arithmetic, which can run commands"
    return variable_problem(match.group(1))


def _has_option(args: list[Word], letter: str) -> bool:
    return any(word.text.startswith("-") and letter in word.text[1:] for word in _options(args))


def _options(args: list[Word]) -> list[Word]:
    options: list[Word] = []
    for word in args:
        if word.text == "--" or not word.text.startswith(("-", "+")) or len(word.text) < 2:
            break
        options.append(word)
    return options


def _declaration_reason(name: str, args: list[Word]) -> str:
    options = _options(args)
    letters = "".join(word.text[1:] for word in options)
    if name in ("declare", "typeset", "local") and ("i" in letters or "n" in letters):
        return f"{name} -i and -n make later assignments evaluate code"
    for word in args[len(options) :]:
        if word.text == "--":
            continue
        if word.static:
            word = Word(re.split(r"\+?=", word.text, maxsplit=1)[0], True)
        if reason := name_reason(word):
            return reason
    return ""


def _named_variables_reason(name: str, args: list[Word]) -> str:
    """``read a b``, ``printf -v a``, ``mapfile -C cmd a``: the names (and callbacks) they are given."""
    values = _VALUE_OPTIONS.get(name, "")
    names: list[Word] = []
    index = 0
    while index < len(args) and args[index].text.startswith("-") and args[index].text != "--":
        text = args[index].text
        index += 1
        for position, letter in enumerate(text[1:], start=1):
            if letter not in values:
                continue
            value = Word(text[position + 1 :], True) if position + 1 < len(text) else None
            if value is None and index < len(args):
                value, index = args[index], index + 1
            if letter == "C" and name in ("mapfile", "readarray"):
                return f"{name} -C runs the command it is given"
            if value is not None and letter == _NAME_OPTIONS.get(name):
                names.append(value)
            break
    operands = args[index + (index < len(args) and args[index].text == "--") :]
    if name in ("read", "unset"):
        names.extend(operands)
    elif name in ("mapfile", "readarray"):
        names.extend(operands[:1])
    elif name == "getopts":
        names.extend(operands[1:2])
    return next((reason for word in names if (reason := name_reason(word))), "")

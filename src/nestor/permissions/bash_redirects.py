"""The files a command line's redirections open: ``ls > f`` writes ``f``, ``cat < f`` reads it.

A redirection to a file is a write of that file (``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``>&
file``), one from a file a read (``<``), ``<>`` both; the rules judge them as the write and read
tools' requests. What is no file is left out: a duplicated or closed descriptor (``2>&1``,
``>&-``), a process substitution, a here-document, and the devices bash or the kernel provide
(``/dev/null``, ``/dev/stdout``, ``/dev/fd/3``). ``/dev/tcp/host/port`` opens a connection: the
line cannot be judged. A target that is an expansion (``> "$f"``) is a file not known before the
line runs (:attr:`FileAccess.path` None), and so is one with a glob or a brace expansion
(``> .en?``): bash opens the one file it matches when the line runs, which may be a file created
or renamed by then, so it is judged as any file, never as the name written.

A tilde is read as bash reads it (:func:`~.bash_words.tilde_prefixes`): ``~/x`` and ``~user/x``
are the home directory's (the rules expand them), ``~+/x`` is ``./x`` (``$PWD``, the directory
the line runs in: a relative path), and ``~-`` (``$OLDPWD``), the directory stack (``~+1``,
``~-0``, ``~2``) and a tilde after an assignment-shaped word's ``=`` or ``:`` (``a=~+/x``) are
not known before the line runs. A quoted tilde (``'~'/x``) is a folder named ``~``. A path
through a process's own folder in ``/proc`` is judged when the rules resolve it
(:func:`~.paths.shell_independent_realpath`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from nestor.permissions.bash_words import node_text, tilde_prefixes, word_of

if TYPE_CHECKING:
    from tree_sitter import Node

FileAction = Literal["read", "write"]

_WRITES = frozenset({">", ">>", ">|", "&>", "&>>"})
_DUPLICATES = frozenset({">&", "<&"})
_DEVICES = re.compile(r"/dev/(?:null|zero|full|random|urandom|tty|stdin|stdout|stderr|fd/\d+)")
_NETWORK = re.compile(r"/dev/(?:tcp|udp)/")
_DIRECTORY_STACK = re.compile(r"~(?:[+-]\d*|\d+)")


@dataclass(frozen=True, slots=True)
class FileAccess:
    """A file a redirection opens.

    Attributes:
        path: The path bash opens, relative to the directory the line runs in unless absolute or
            ``~/...`` (``~user/...``), or None when it is not known before the line runs.
        action: ``read`` or ``write``.

    """

    path: str | None
    action: FileAction


def redirect_accesses(node: Node) -> tuple[list[FileAccess], str]:
    """The files the redirection ``node`` opens, and why the line cannot be judged ("" when it can)."""
    if node.type == "heredoc_redirect":
        accesses: list[FileAccess] = []
        problem = ""
        for child in node.named_children:
            found, found_problem = redirect_accesses(child)
            accesses.extend(found)
            problem = problem or found_problem
        return accesses, problem
    if node.type != "file_redirect":
        return [], ""
    operator = _operator(node)
    targets = [child for child in node.named_children if child.type not in ("file_descriptor", "ERROR")]
    if not targets or targets[0].type == "process_substitution":
        return [], ""
    word = word_of(targets[0])
    if operator in _DUPLICATES:
        if word.static and (word.text.isdigit() or word.text == "-"):
            return [], ""
        actions: tuple[FileAction, ...] = ("write",) if operator == ">&" else ("read",)
    elif operator == "<>":
        actions = ("read", "write")
    elif operator in _WRITES:
        actions = ("write",)
    else:
        actions = ("read",)
    if not word.static or not word.single:
        return [FileAccess(None, action) for action in actions], ""
    if _DEVICES.fullmatch(word.text):
        return [], ""
    if _NETWORK.match(word.text):
        return [], f"the redirection to {word.text} opens a network connection"
    path = _path(targets[0], word.text)
    return [FileAccess(path, action) for action in actions], ""


def _path(target: Node, text: str) -> str | None:
    """The path a redirection to the static word ``text`` opens, as the rules read it; None if not known."""
    tildes = tilde_prefixes(target)
    if not tildes:
        return "./" + text if text.startswith("~") else text  # a quoted tilde is a name
    offset, prefix = tildes[0]
    if offset or len(tildes) > 1 or (prefix != "~+" and _DIRECTORY_STACK.fullmatch(prefix)):
        return None  # $OLDPWD, the directory stack, an assignment's tilde: known when the line runs
    return "." + text.removeprefix("~+") if prefix == "~+" else text


def _operator(node: Node) -> str:
    """The redirection's operator; tree-sitter reads ``<>`` as ``<`` and ``>`` with an error between."""
    previous = node.prev_sibling
    operator = node_text(previous) if previous is not None and previous.type == "ERROR" else ""
    for child in node.children:
        if child.type == "ERROR":
            operator += node_text(child)
        elif not child.is_named:
            operator += child.type
    return operator.strip()


def is_relative(path: str) -> bool:
    """True for a path the directory the line runs in resolves (not ``/...`` nor ``~...``)."""
    return not path.startswith(("/", "~"))

"""Splitting a shell command line into the simple commands it runs, for the ``bash`` rules to judge.

``git status; rm -rf x`` runs two commands, and so do ``git status $(rm -rf x)``,
``git status | tee x``, ``bash -c 'rm -rf x'`` and ``sudo /bin/rm -rf x``. A rule must see each of
them as what it is: the line is parsed with tree-sitter's bash grammar, every simple command is
collected (inside substitutions, pipelines, lists, subshells, groups, loops and the string of
``bash -c``), and each is normalised: leading ``VAR=value`` assignments dropped, the command name
reduced to its basename, and wrappers such as ``env``, ``timeout`` or ``sudo`` unwrapped.

A backquoted command is parsed again as bash reads it (an escaped backquote inside one nests a
command). What cannot be judged statically is reported as unresolved, and rules never allow such a
line: a parse error, text the grammar leaves unparsed where bash expands it
(:mod:`.bash_unparsed`), a command name that is an expansion, a shell reading its script from
stdin or a file, an expansion or arithmetic that evaluates a variable's value
(:mod:`.bash_expansions`), a builtin that runs or defines code (:mod:`.bash_builtins`), git, awk,
sed or another program told to run a command (:mod:`.bash_git`, :mod:`.bash_text_tools`,
:mod:`.bash_command_options`), a variable that changes what commands run (:mod:`.variables`).
The files the line's redirections open are collected too (:mod:`.bash_redirects`), for the read
and write rules, made unknown where the line changes directory or links or moves files
(:mod:`.bash_path_changes`). The words of a command come from :mod:`.bash_words`, and
:mod:`.bash_wrappers` unwraps them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nestor.permissions.bash_builtins import builtin_reason
from nestor.permissions.bash_command_options import command_option_reason
from nestor.permissions.bash_expansions import evaluation_reasons
from nestor.permissions.bash_git import git_reason
from nestor.permissions.bash_path_changes import MovedPaths, moved_paths, unmoved, widest
from nestor.permissions.bash_redirects import FileAccess, redirect_accesses
from nestor.permissions.bash_text_tools import AWKS, awk_reason, sed_reason
from nestor.permissions.bash_unparsed import unparsed_reasons
from nestor.permissions.bash_words import Word, backquoted_source, node_text, with_placeholder, word_of
from nestor.permissions.bash_wrappers import PRIVILEGED_WRAPPERS, unwrap

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# Shells whose -c string is bash's syntax, and others whose string is parsed as bash too (a deny
# rule still sees "rm" in "zsh -c 'rm x'") but whose own syntax may run more than bash's would.
_BASH_SHELLS = frozenset({"sh", "bash", "dash", "ash"})
SHELLS = _BASH_SHELLS | frozenset({"zsh", "ksh", "ksh93", "mksh", "pdksh", "oksh", "yash", "posh", "hush"})
# Shells whose code is not bash's at all: nothing they run can be judged.
_FOREIGN_SHELLS = frozenset(
    {
        "fish",
        "csh",
        "tcsh",
        "rc",
        "es",
        "nu",
        "elvish",
        "xonsh",
        "pwsh",
        "powershell",
        "ysh",
        "osh",
        "ion",
        "murex",
    }
)
_MAX_SHELL_NESTING = 8
# A command "named" like a reserved word means the grammar misread the line (tree-sitter-bash
# reads "! { rm x; }" as a command "{"): the line is not judged, and the rest of the words are.
_RESERVED_WORDS = frozenset(
    {
        "{",
        "}",
        "!",
        "then",
        "do",
        "done",
        "fi",
        "else",
        "elif",
        "esac",
        "in",
        "if",
        "while",
        "until",
        "for",
        "case",
        "select",
        "function",
        "coproc",
        "[[",
        "]]",
    }
)
_LEADING_RESERVED = re.compile(r"^(?:\s*(?:[{}!]|then|do|done|fi|else|elif|esac)(?=\s|$))+")
# "coproc NAME { ...; }" and "coproc cmd": what follows the keyword (and the name) is what runs.
_COPROC = re.compile(r"^\s*coproc\s+(?:[A-Za-z_]\w*\s+(?=[{(]))?")
# Options of a shell that take the next word as their value: "bash -o errexit -c 'rm x'".
_SHELL_OPTIONS_WITH_VALUE = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_LINE_CONTINUATION = re.compile(rb"(?:\\\n)+")


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command the line runs, as rules see it.

    Attributes:
        text: The normalised command: name (basename, wrappers unwrapped) and arguments, joined by
            single spaces, followed by its redirections (``git status > out``).
        aliases: The same command before each unwrapping step (``sudo rm x``, ``env A=1 rm x``);
            deny rules match these too, so ``deny bash(sudo *)`` still holds.
        allow_text: What an allow rule must match: :attr:`text`, or the command up to a privileged
            wrapper (``sudo apt update``) when one was unwrapped.
        needs_allow: False for a shell whose ``-c`` string was parsed in its place: the commands
            of that string are what must be allowed, the shell itself only answers to deny rules.

    """

    text: str
    aliases: tuple[str, ...] = ()
    allow_text: str = ""
    needs_allow: bool = True

    @property
    def deny_texts(self) -> tuple[str, ...]:
        """Every spelling a deny rule is matched against."""
        return (self.text, *self.aliases)


@dataclass(frozen=True, slots=True)
class CommandLine:
    """A command line split into simple commands.

    Attributes:
        commands: Every simple command found, in source order.
        unresolved: Why the line cannot be judged in full (empty when it can): allow rules never
            cover a line with a reason here, deny rules still apply to the commands found.
        files: The files its redirections open, in source order.

    """

    commands: tuple[SimpleCommand, ...]
    unresolved: tuple[str, ...] = ()
    files: tuple[FileAccess, ...] = ()


@dataclass
class _Collector:
    """What a walk over the syntax tree finds."""

    commands: list[SimpleCommand] = field(default_factory=list[SimpleCommand])
    unresolved: list[str] = field(default_factory=list[str])
    files: list[FileAccess] = field(default_factory=list[FileAccess])
    moved: MovedPaths = ""
    depth: int = 0


def parse_command_line(source: str) -> CommandLine:
    """Split ``source`` into its simple commands, normalised; see the module docstring."""
    return _parse_cached(source)


@functools.lru_cache(maxsize=256)
def _parse_cached(source: str) -> CommandLine:
    collector = _Collector()
    _collect_source(source, collector)
    if not collector.commands and not collector.unresolved:
        collector.unresolved.append("no command to run")
    # After "cd" a relative path names a file in a directory only known when the line runs; after
    # "ln -s" any path may lead elsewhere.
    files = unmoved(collector.files, collector.moved)
    return CommandLine(tuple(collector.commands), tuple(dict.fromkeys(collector.unresolved)), tuple(files))


@functools.cache
def _parser() -> Parser:
    # Imported here: tree-sitter is needed only when a bash rule is judged, not at start-up.
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _collect_source(source: str, collector: _Collector) -> None:
    tree = _parser().parse(source.encode("utf-8", errors="surrogateescape"))
    if tree.root_node.has_error:
        collector.unresolved.append("the command does not parse")
    collector.unresolved.extend(evaluation_reasons(tree.root_node))
    collector.unresolved.extend(unparsed_reasons(tree.root_node))
    _walk(tree.root_node, collector)


def _nested_source(source: str, collector: _Collector) -> None:
    """Collect a command line found inside another: a shell's ``-c`` string, a backquoted command."""
    if collector.depth >= _MAX_SHELL_NESTING:
        collector.unresolved.append("command lines are nested too deep")
        return
    collector.depth += 1
    _collect_source(source, collector)
    collector.depth -= 1


def _walk(node: Node, collector: _Collector) -> None:
    kind = node.type
    if kind == "command":
        _command(node, [], collector)
    elif kind == "redirected_statement":
        _redirected(node, collector)
    elif kind in ("declaration_command", "unset_command"):
        words = [node_text(child) for child in node.children if child.type != "comment"]
        collector.commands.append(SimpleCommand(" ".join(words), allow_text=" ".join(words)))
        if reason := builtin_reason(_declaration_words(node)):
            collector.unresolved.append(reason)
        _walk_children(node, collector)
    elif kind == "function_definition":
        collector.unresolved.append("it defines a function")
        _walk_children(node, collector)
    elif kind.endswith("redirect"):
        _redirection(node, collector)  # one no command holds: "$(<f)" reads f
    elif (source := backquoted_source(node)) is not None:
        _nested_source(source, collector)
    else:
        _walk_children(node, collector)


def _walk_children(node: Node, collector: _Collector) -> None:
    for child in node.named_children:
        _walk(child, collector)


def _declaration_words(node: Node) -> list[Word]:
    """``declare -i a=1 "$b"`` as words: the keyword, options, and each name (with ``=`` if assigned)."""
    words: list[Word] = []
    for child in node.children:
        if child.type == "variable_assignment":
            name = child.child_by_field_name("name")
            words.append(Word(node_text(name) + "=" if name is not None else node_text(child), True))
        elif child.type == "variable_name" or not child.is_named:
            words.append(Word(node_text(child), True))
        elif child.type != "comment":
            words.append(word_of(child))
    return words


def _redirected(node: Node, collector: _Collector) -> None:
    body = node.child_by_field_name("body")
    redirects = [child for child in node.named_children if child != body]
    for redirect in redirects:
        _redirection(redirect, collector)
    if body is None:
        return
    if body.type == "command":
        _command(body, [_redirect_text(redirect) for redirect in redirects], collector)
        return
    # A group's redirection is judged as the file it opens; each command inside as itself.
    _walk(body, collector)


def _redirection(redirect: Node, collector: _Collector) -> None:
    """The substitutions inside a redirection, and the files it opens (those of the ones it holds too)."""
    _redirection_parts(redirect, collector)
    accesses, problem = redirect_accesses(redirect)
    collector.files.extend(accesses)
    if problem:
        collector.unresolved.append(problem)


def _redirection_parts(redirect: Node, collector: _Collector) -> None:
    for child in redirect.named_children:
        if child.type.endswith("redirect"):
            _redirection_parts(child, collector)  # "cat <<E > f": its file is read with the outer one
        else:
            _walk(child, collector)


def _redirect_text(node: Node) -> str:
    if node.type == "heredoc_redirect":
        start = next((child for child in node.children if child.type == "heredoc_start"), None)
        nested = [_redirect_text(child) for child in node.named_children if child.type.endswith("redirect")]
        return " ".join(["<<" + (node_text(start) if start is not None else ""), *nested])
    return " ".join(node_text(node).split())


def _command(node: Node, redirects: list[str], collector: _Collector) -> None:
    name = node.child_by_field_name("name")
    name_tokens = node_text(name).split() if name is not None and name.type == "command_name" else []
    if name_tokens and name_tokens[0] in _RESERVED_WORDS:
        collector.unresolved.append(f"{name_tokens[0]} is read as a command name")
        text = node_text(node)
        rest = (_COPROC if name_tokens[0] == "coproc" else _LEADING_RESERVED).sub("", text, count=1)
        # Nothing stripped ("if", "[[" read as names) would parse the same text forever.
        if rest.strip() and rest != text:
            _collect_source(rest, collector)
        return
    words: list[Word] = []
    previous: Node | None = None
    for child in node.named_children:
        joined = previous is not None and _continues(node, previous, child)
        previous = child
        if child.type.endswith("redirect"):
            _redirection(child, collector)
            redirects.append(_redirect_text(child))
            continue
        # Assignments and arguments may hold substitutions, which run commands of their own.
        _walk(child, collector)
        if child.type == "variable_assignment" and not words:
            continue
        if child.type == "comment":
            continue
        target = child.named_children[0] if child.type == "command_name" and child.named_children else child
        word = word_of(target)
        if joined and words:
            # bash removes a backslash-newline before it splits words: "r\\<newline>m" is "rm".
            last = words[-1]
            words[-1] = Word(last.text + word.text, last.static and word.static)
        else:
            words.append(word)
    _add_command(words, redirects, collector)


def _continues(command: Node, previous: Node, child: Node) -> bool:
    """Whether ``child`` goes on the word before it: only line continuations lie between them."""
    source = command.text or b""
    gap = source[previous.end_byte - command.start_byte : child.start_byte - command.start_byte]
    return bool(gap) and _LINE_CONTINUATION.fullmatch(gap) is not None


def _add_command(words: list[Word], redirects: list[str], collector: _Collector) -> None:
    stages = list(unwrap(words))
    final, problem = stages[-1].words, stages[-1].problem
    if problem:
        collector.unresolved.append(problem)
    for stage in stages:
        collector.moved = widest(collector.moved, stage.moved)
    suffix = [r for r in redirects if r]

    def render(stage: list[Word]) -> str:
        return " ".join([w.text for w in stage] + suffix)

    texts = [render(stage.words) for stage in stages]
    allow_text = texts[-1]
    for index, stage in enumerate(stages[:-1]):
        if _name(stage.words) in PRIVILEGED_WRAPPERS:
            allow_text = texts[index]
            break
    if not final:
        collector.commands.append(SimpleCommand(texts[-1], tuple(texts[:-1]), allow_text))
        return
    name = _name(final)
    collector.moved = widest(collector.moved, moved_paths(final))
    if not final[0].static or not final[0].single:
        collector.unresolved.append(f"the command name {final[0].text} is not known before it runs")
        name = ""
    elif reason := _program_reason(final):
        collector.unresolved.append(reason)
    if name in SHELLS:
        if _shell(final, collector):
            collector.commands.append(SimpleCommand(texts[-1], tuple(texts[:-1]), allow_text, False))
            return
    elif name == "find":
        _find_exec(final, collector)
    collector.commands.append(SimpleCommand(texts[-1], tuple(dict.fromkeys(texts[:-1])), allow_text))


def _name(words: Sequence[Word]) -> str:
    return words[0].text if words else ""


def _program_reason(words: list[Word]) -> str:
    """Why the command ``words`` runs code its words only name, or ""."""
    name = words[0].text
    if name in _FOREIGN_SHELLS:
        return f"{name} runs code in a language other than bash's"
    if name == "git":
        return git_reason(words)
    if name in AWKS:
        return awk_reason(words)
    if name == "sed":
        return sed_reason(words)
    return builtin_reason(words) or command_option_reason(words)


def _shell(words: list[Word], collector: _Collector) -> bool:
    """Parse the string of ``sh -c STRING``; True when the shell was replaced by what it runs."""
    args = words[1:]
    is_value = False
    for index, word in enumerate(args):
        if not word.static:
            collector.unresolved.append(f"{words[0].text} is given {word.text}")
            return False
        text = word.text
        if is_value:
            is_value = False
            continue
        if text in _SHELL_OPTIONS_WITH_VALUE or (
            text[:1] in "-+" and text[1:2] != "-" and text[-1:] in "oO" and len(text) > 2
        ):
            is_value = True
            continue
        if text == "--" or not text.startswith(("-", "+")):
            if index == 0 or not any(_has_c_flag(a.text) for a in args[:index]):
                script = args[index + 1].text if text == "--" and index + 1 < len(args) else text
                collector.unresolved.append(
                    f"{words[0].text} runs the script {script}, whose commands are not read"
                )
                return False
            if words[0].text not in _BASH_SHELLS:
                collector.unresolved.append(f"{words[0].text}'s syntax is not bash's, which nestor reads")
            string = args[index + 1] if text == "--" and index + 1 < len(args) else word
            _nested_source(string.text, collector)
            return True
    # No operand: the shell runs what it reads, and what it reads is not known here.
    collector.unresolved.append(f"{words[0].text} reads the commands it runs from its input")
    return False


def _has_c_flag(text: str) -> bool:
    return text.startswith("-") and not text.startswith("--") and "c" in text[1:]


def _find_exec(words: list[Word], collector: _Collector) -> None:
    """``find ... -exec rm {} ;`` runs ``rm``: judge it like any command (``-execdir`` elsewhere)."""
    index = 1
    while index < len(words):
        if words[index].text in ("-exec", "-execdir", "-ok", "-okdir"):
            if words[index].text.endswith("dir"):
                collector.moved = widest(collector.moved, "relative")  # it runs in each file's folder
            end = index + 1
            while end < len(words) and words[end].text not in (";", "+"):
                end += 1
            if end > index + 1:
                _add_command(with_placeholder(words[index + 1 : end], "{}"), [], collector)
            index = end
        index += 1

"""Splitting a shell command line into the simple commands it runs, for the ``bash`` rules to judge.

``git status; rm -rf x`` runs two commands, and so do ``git status $(rm -rf x)``,
``git status | tee x``, ``bash -c 'rm -rf x'`` and ``sudo /bin/rm -rf x``. A rule must see each of
them as what it is: the line is parsed with tree-sitter's bash grammar, every simple command is
collected (inside substitutions, pipelines, lists, subshells, groups, loops and the string of
``bash -c``), and each is normalised: leading ``VAR=value`` assignments dropped, the command name
reduced to its basename, and wrappers such as ``env``, ``timeout`` or ``sudo`` unwrapped.

What cannot be judged statically (a parse error, a command name that is an expansion, ``eval``, a
shell reading its script from stdin) is reported as unresolved; rules never allow such a line.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash"})
# Builtins that run a string they are given: nothing static can be said about what they run.
_STRING_EVALUATORS = frozenset({"eval", "trap", "fc"})
# Builtins after which a later word may run something else than it says: an alias (with
# ``shopt -s expand_aliases``) makes ``x -rf y`` run ``rm -rf y``.
_COMMAND_DEFINERS = frozenset({"alias", "enable"})
# Wrappers that run their operand with more privilege: an allow rule must name them (sudo apt*),
# so allowing "apt update" never allows "sudo apt update".
_PRIVILEGED_WRAPPERS = frozenset({"sudo", "doas", "pkexec", "su", "runuser"})
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
_GLOB_CHARACTERS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class _Wrapper:
    """How to find the command a wrapper runs: its options, and which of them take a value."""

    flags_with_value: frozenset[str] = frozenset()
    long_with_value: frozenset[str] = frozenset()
    operands_before_command: int = 0
    skips_assignments: bool = False
    unresolvable_flags: frozenset[str] = frozenset()


_WRAPPERS: dict[str, _Wrapper] = {
    "command": _Wrapper(),
    "builtin": _Wrapper(),
    "exec": _Wrapper(flags_with_value=frozenset("a")),
    "env": _Wrapper(
        flags_with_value=frozenset("uC"),
        long_with_value=frozenset({"--unset", "--chdir"}),
        skips_assignments=True,
        unresolvable_flags=frozenset({"-S", "--split-string"}),
    ),
    "nice": _Wrapper(flags_with_value=frozenset("n"), long_with_value=frozenset({"--adjustment"})),
    "timeout": _Wrapper(
        flags_with_value=frozenset("sk"),
        long_with_value=frozenset({"--signal", "--kill-after"}),
        operands_before_command=1,
    ),
    "xargs": _Wrapper(
        flags_with_value=frozenset("IiLlnPsdEea"),
        long_with_value=frozenset(
            {"--max-lines", "--max-args", "--max-procs", "--max-chars", "--delimiter", "--arg-file"}
        ),
    ),
    "sudo": _Wrapper(
        flags_with_value=frozenset("ugCDhprtTU"),
        long_with_value=frozenset(
            {"--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role", "--type"}
        ),
    ),
    "doas": _Wrapper(flags_with_value=frozenset("uC")),
    "nohup": _Wrapper(),
    "time": _Wrapper(flags_with_value=frozenset("fo"), long_with_value=frozenset({"--format", "--output"})),
    "stdbuf": _Wrapper(flags_with_value=frozenset("ioe")),
    "ionice": _Wrapper(flags_with_value=frozenset("cnp")),
    "setsid": _Wrapper(),
    "busybox": _Wrapper(),
    "unbuffer": _Wrapper(),
    "watch": _Wrapper(flags_with_value=frozenset("nqd"), long_with_value=frozenset({"--interval"})),
    "flock": _Wrapper(
        flags_with_value=frozenset("wE"),
        long_with_value=frozenset({"--timeout", "--conflict-exit-code"}),
        operands_before_command=1,
        unresolvable_flags=frozenset({"-c", "--command"}),
    ),
    "taskset": _Wrapper(operands_before_command=1, unresolvable_flags=frozenset({"-p", "--pid"})),
    "chrt": _Wrapper(flags_with_value=frozenset("T"), operands_before_command=1),
    "strace": _Wrapper(flags_with_value=frozenset("abeEIoOpPsSuUX")),
    "ltrace": _Wrapper(flags_with_value=frozenset("aAeEFlLnopsSuwx")),
    "unshare": _Wrapper(flags_with_value=frozenset("SGRw")),
    "pkexec": _Wrapper(long_with_value=frozenset({"--user"})),
    "su": _Wrapper(unresolvable_flags=frozenset({"-c", "--command"})),
    "runuser": _Wrapper(unresolvable_flags=frozenset({"-c", "--command"})),
    "script": _Wrapper(unresolvable_flags=frozenset({"-c", "--command"})),
}


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

    """

    commands: tuple[SimpleCommand, ...]
    unresolved: tuple[str, ...] = ()


@dataclass
class _Word:
    """A shell word: its value when static (no expansion), else the source text as written."""

    text: str
    static: bool


@dataclass
class _Collector:
    """What a walk over the syntax tree finds."""

    commands: list[SimpleCommand] = field(default_factory=list[SimpleCommand])
    unresolved: list[str] = field(default_factory=list[str])
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
    return CommandLine(tuple(collector.commands), tuple(dict.fromkeys(collector.unresolved)))


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
    _walk(tree.root_node, collector)


def _walk(node: Node, collector: _Collector) -> None:
    kind = node.type
    if kind == "command":
        _command(node, [], collector)
    elif kind == "redirected_statement":
        _redirected(node, collector)
    elif kind in ("declaration_command", "unset_command"):
        words = [_text(child) for child in node.children if child.type != "comment"]
        collector.commands.append(SimpleCommand(" ".join(words), allow_text=" ".join(words)))
        _walk_children(node, collector)
    elif kind == "function_definition":
        collector.unresolved.append("it defines a function")
        _walk_children(node, collector)
    else:
        _walk_children(node, collector)


def _walk_children(node: Node, collector: _Collector) -> None:
    for child in node.named_children:
        _walk(child, collector)


def _redirected(node: Node, collector: _Collector) -> None:
    body = node.child_by_field_name("body")
    redirects = [child for child in node.named_children if child != body]
    for redirect in redirects:
        _walk_children(redirect, collector)
    if body is None:
        return
    if body.type == "command":
        _command(body, [_redirect_text(redirect) for redirect in redirects], collector)
        return
    if any(_redirect_text(redirect) and redirect.type != "heredoc_redirect" for redirect in redirects):
        # A redirection of a whole group belongs to no single command, so no rule can cover it.
        collector.unresolved.append("a group of commands is redirected")
    _walk(body, collector)


def _redirect_text(node: Node) -> str:
    if node.type == "heredoc_redirect":
        start = next((child for child in node.children if child.type == "heredoc_start"), None)
        nested = [_redirect_text(child) for child in node.named_children if child.type.endswith("redirect")]
        return " ".join(["<<" + (_text(start) if start is not None else ""), *nested])
    return " ".join(_text(node).split())


def _command(node: Node, redirects: list[str], collector: _Collector) -> None:
    name = node.child_by_field_name("name")
    name_tokens = _text(name).split() if name is not None and name.type == "command_name" else []
    if name_tokens and name_tokens[0] in _RESERVED_WORDS:
        collector.unresolved.append(f"{name_tokens[0]} is read as a command name")
        text = _text(node)
        rest = (_COPROC if name_tokens[0] == "coproc" else _LEADING_RESERVED).sub("", text, count=1)
        # Nothing stripped ("if", "[[" read as names) would parse the same text forever.
        if rest.strip() and rest != text:
            _collect_source(rest, collector)
        return
    words: list[_Word] = []
    previous: Node | None = None
    for child in node.named_children:
        joined = previous is not None and _continues(node, previous, child)
        previous = child
        # Assignments and arguments may hold substitutions, which run commands of their own.
        _walk_children(child, collector)
        if child.type == "variable_assignment" and not words:
            continue
        if child.type.endswith("redirect"):
            redirects.append(_redirect_text(child))
            continue
        if child.type == "comment":
            continue
        target = child.named_children[0] if child.type == "command_name" and child.named_children else child
        word = _word(target)
        if joined and words:
            # bash removes a backslash-newline before it splits words: "r\\<newline>m" is "rm".
            last = words[-1]
            words[-1] = _Word(last.text + word.text, last.static and word.static)
        else:
            words.append(word)
    _add_command(words, redirects, collector)


def _continues(command: Node, previous: Node, child: Node) -> bool:
    """Whether ``child`` goes on the word before it: only line continuations lie between them."""
    source = command.text or b""
    gap = source[previous.end_byte - command.start_byte : child.start_byte - command.start_byte]
    return bool(gap) and _LINE_CONTINUATION.fullmatch(gap) is not None


def _add_command(words: list[_Word], redirects: list[str], collector: _Collector) -> None:
    stages = list(_unwrap(words))
    final, problem = stages[-1]
    if problem:
        collector.unresolved.append(problem)
    suffix = [r for r in redirects if r]

    def render(stage: list[_Word]) -> str:
        return " ".join([w.text for w in stage] + suffix)

    texts = [render(stage) for stage, _ in stages]
    allow_text = texts[-1]
    for index, (stage, _) in enumerate(stages[:-1]):
        if _name(stage) in _PRIVILEGED_WRAPPERS:
            allow_text = texts[index]
            break
    if not final:
        collector.commands.append(SimpleCommand(texts[-1], tuple(texts[:-1]), allow_text))
        return
    name = _name(final)
    if not final[0].static or _GLOB_CHARACTERS.intersection(final[0].text):
        collector.unresolved.append(f"the command name {final[0].text} is not known before it runs")
    elif name in _STRING_EVALUATORS:
        collector.unresolved.append(f"{name} runs a string")
    elif name in _COMMAND_DEFINERS:
        collector.unresolved.append(f"{name} defines commands")
    elif name in SHELLS:
        if _shell(final, collector):
            collector.commands.append(SimpleCommand(texts[-1], tuple(texts[:-1]), allow_text, False))
            return
    elif name == "find":
        _find_exec(final, collector)
    collector.commands.append(SimpleCommand(texts[-1], tuple(dict.fromkeys(texts[:-1])), allow_text))


def _name(words: Sequence[_Word]) -> str:
    return words[0].text if words else ""


def _unwrap(words: list[_Word]) -> Iterator[tuple[list[_Word], str]]:
    """Yield the command at each unwrapping step, the last with a reason when it went wrong."""
    current = _drop_assignments(words)
    current = _with_basename(current)
    while current and current[0].static and current[0].text in _WRAPPERS:
        inner, problem = _wrapped_command(current[0].text, current[1:])
        if problem or not inner:
            yield current, problem
            return
        yield current, ""
        current = _with_basename(inner)
    yield current, ""


def _drop_assignments(words: list[_Word]) -> list[_Word]:
    index = 0
    while index < len(words) and _is_assignment(words[index]):
        index += 1
    return words[index:]


def _is_assignment(word: _Word) -> bool:
    name, equals, _ = word.text.partition("=")
    return bool(equals) and name.isidentifier()


def _with_basename(words: list[_Word]) -> list[_Word]:
    if not words or not words[0].static:
        return words
    return [_Word(posixpath.basename(words[0].text) or words[0].text, True), *words[1:]]


def _wrapped_command(wrapper: str, args: list[_Word]) -> tuple[list[_Word], str]:
    """The command ``wrapper`` runs with ``args``, or a reason it cannot be told."""
    spec = _WRAPPERS[wrapper]
    index = 0
    operands = spec.operands_before_command
    while index < len(args):
        word = args[index]
        text = word.text
        if not word.static:
            return [], f"{wrapper} is given {text}, which is not known before it runs"
        if text == "--":
            index += 1
            break
        if spec.skips_assignments and _is_assignment(word):
            index += 1
            continue
        if text.startswith("--") and len(text) > 2:
            option = text.split("=", 1)[0]
            if option in spec.unresolvable_flags:
                return [], f"{wrapper} {option} is not followed"
            index += 2 if option in spec.long_with_value and "=" not in text else 1
            continue
        if text.startswith("-") and len(text) > 1:
            index += 1
            # A value-taking flag takes the rest of its cluster, or the next word.
            for position, letter in enumerate(text[1:], start=1):
                if "-" + letter in spec.unresolvable_flags:
                    return [], f"{wrapper} -{letter} is not followed"
                if letter in spec.flags_with_value:
                    if position == len(text) - 1:
                        index += 1
                    break
            continue
        if operands:
            operands -= 1
            index += 1
            continue
        break
    return args[index:], ""


def _shell(words: list[_Word], collector: _Collector) -> bool:
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
                return False  # a script file: the shell is an ordinary command
            if collector.depth >= _MAX_SHELL_NESTING:
                collector.unresolved.append("shells are nested too deep")
                return True
            string = args[index + 1] if text == "--" and index + 1 < len(args) else word
            collector.depth += 1
            _collect_source(string.text, collector)
            collector.depth -= 1
            return True
    # No operand: the shell runs what it reads, and what it reads is not known here.
    collector.unresolved.append(f"{words[0].text} reads the commands it runs from its input")
    return False


def _has_c_flag(text: str) -> bool:
    return text.startswith("-") and not text.startswith("--") and "c" in text[1:]


def _find_exec(words: list[_Word], collector: _Collector) -> None:
    """``find ... -exec rm {} ;`` runs ``rm``: judge it like any command."""
    index = 1
    while index < len(words):
        if words[index].text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(words) and words[end].text not in (";", "+"):
                end += 1
            if end > index + 1:
                _add_command(words[index + 1 : end], [], collector)
            index = end
        index += 1


def _word(node: Node) -> _Word:
    kind = node.type
    if kind in ("word", "number"):
        return _Word(_unescape(_text(node)), True)
    if kind == "raw_string":
        return _Word(_text(node)[1:-1], True)
    if kind == "string":
        parts = node.named_children
        if all(part.type == "string_content" for part in parts):
            return _Word("".join(_unescape_double_quoted(_text(part)) for part in parts), True)
        return _Word(_text(node), False)
    if kind == "concatenation":
        pieces = [_word(part) for part in node.named_children]
        if all(piece.static for piece in pieces):
            return _Word("".join(piece.text for piece in pieces), True)
        return _Word(_text(node), False)
    return _Word(_text(node), False)


def _unescape(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _unescape_double_quoted(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in '$`"\\\n':
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", errors="surrogateescape") if raw is not None else ""

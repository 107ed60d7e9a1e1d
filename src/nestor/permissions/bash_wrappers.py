"""Wrappers such as ``env``, ``timeout`` or ``sudo``: the command each one runs, found in its words.

``sudo -u me env A=1 timeout 5 rm x`` runs ``rm x``: each wrapper's options (and which of them
take a value) are known, so its words are skipped up to the command it runs, step by step. A
wrapper whose command cannot be told (``env -S``, ``su -c``) is reported with the reason.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

from nestor.permissions.bash_words import Word

# Wrappers that run their operand with more privilege: an allow rule must name them (sudo apt*),
# so allowing "apt update" never allows "sudo apt update".
PRIVILEGED_WRAPPERS = frozenset({"sudo", "doas", "pkexec", "su", "runuser"})


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


def unwrap(words: list[Word]) -> Iterator[tuple[list[Word], str]]:
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


def _drop_assignments(words: list[Word]) -> list[Word]:
    index = 0
    while index < len(words) and _is_assignment(words[index]):
        index += 1
    return words[index:]


def _is_assignment(word: Word) -> bool:
    name, equals, _ = word.text.partition("=")
    return bool(equals) and name.isidentifier()


def _with_basename(words: list[Word]) -> list[Word]:
    if not words or not words[0].static:
        return words
    return [Word(posixpath.basename(words[0].text) or words[0].text, True), *words[1:]]


def _wrapped_command(wrapper: str, args: list[Word]) -> tuple[list[Word], str]:
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

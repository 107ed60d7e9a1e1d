"""Reading a program's options as its own parser reads them: getopt's short clusters and GNU long options.

``stdbuf --output 0 rm f`` runs ``rm f``, and ``prlimit -n 100 rm f`` runs ``100``: whether an
option takes the next word depends on the program's option table, so each wrapper declares its
own (:class:`OptionSyntax`, written as getopt's ``optstring`` and a list of long names) and
:func:`read_option` reads one option word the way ``getopt_long`` would, abbreviations of long
options included (``--out 0`` is ``--output 0``). An option the table does not know is reported,
never guessed at: the program may take a value nestor would read as the command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from nestor.permissions.bash_words import Word

Arity = Literal["none", "required", "optional"]


@dataclass(frozen=True, slots=True)
class OptionSyntax:
    """A program's options, as its ``getopt_long`` call declares them.

    Attributes:
        short: getopt's optstring: a letter alone is a flag, ``x:`` takes a value (attached or
            the next word), ``x::`` an optional value (attached only).
        long: Long option names separated by spaces: ``name`` is a flag, ``name=`` takes a value
            (``--name=v`` or ``--name v``), ``name=?`` an optional one (``--name=v`` only).

    """

    short: str = ""
    long: str = ""
    _short: dict[str, Arity] = field(init=False, repr=False, compare=False)
    _long: dict[str, Arity] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        shorts: dict[str, Arity] = {}
        index = 0
        while index < len(self.short):
            letter = self.short[index]
            colons = len(self.short[index + 1 :]) - len(self.short[index + 1 :].lstrip(":"))
            shorts[letter] = ("none", "required", "optional")[min(colons, 2)]
            index += 1 + colons
        longs: dict[str, Arity] = {}
        for spec in self.long.split():
            if spec.endswith("=?"):
                longs[spec[:-2]] = "optional"
            elif spec.endswith("="):
                longs[spec[:-1]] = "required"
            else:
                longs[spec] = "none"
        object.__setattr__(self, "_short", shorts)
        object.__setattr__(self, "_long", longs)

    def long_option(self, written: str) -> tuple[str, Arity] | None:
        """The long option ``written`` names (exactly, or as its one unambiguous abbreviation)."""
        if written in self._long:
            return written, self._long[written]
        matches = [name for name in self._long if name.startswith(written)]
        if len(matches) != 1:
            # getopt_long refuses an ambiguous abbreviation unless every candidate is one option.
            return None
        return matches[0], self._long[matches[0]]

    def short_option(self, letter: str) -> Arity | None:
        """How the short option ``letter`` takes a value, or None when the program has no such option."""
        return self._short.get(letter)


@dataclass(frozen=True, slots=True)
class ReadOption:
    """One option word (and its value's word, if separate) as the program reads it.

    Attributes:
        names: The options given (``-v``, ``--output``), in order: a cluster gives several.
        value: The value of the last option, when it takes one (None otherwise).
        consumed: How many words the option used (1, or 2 when its value is the next word).
        problem: Why it cannot be read (an option the program does not have): empty when it can.

    """

    names: tuple[str, ...]
    value: str | None
    consumed: int
    problem: str = ""


def read_option(program: str, syntax: OptionSyntax, words: list[Word], index: int) -> ReadOption:
    """Read the option word at ``words[index]`` (a static word starting with ``-``) as ``program`` does."""
    text = words[index].text
    following = words[index + 1] if index + 1 < len(words) else None
    if text.startswith("--"):
        written, equals, attached = text[2:].partition("=")
        found = syntax.long_option(written)
        if found is None:
            return ReadOption((), None, 1, f"{program} --{written} is not an option nestor knows")
        name, arity = found
        if equals:
            return ReadOption((f"--{name}",), attached, 1)
        if arity == "required":
            return _separate_value(program, f"--{name}", following)
        return ReadOption((f"--{name}",), None, 1)
    names: list[str] = []
    for position, letter in enumerate(text[1:], start=1):
        arity = syntax.short_option(letter)
        if arity is None:
            return ReadOption((), None, 1, f"{program} -{letter} is not an option nestor knows")
        names.append(f"-{letter}")
        rest = text[position + 1 :]
        if arity == "none":
            continue
        if rest or arity == "optional":
            return ReadOption(tuple(names), rest or None, 1)
        read = _separate_value(program, f"-{letter}", following)
        return ReadOption((*names[:-1], *read.names), read.value, read.consumed, read.problem)
    return ReadOption(tuple(names), None, 1)


def _separate_value(program: str, name: str, following: Word | None) -> ReadOption:
    if following is None:
        return ReadOption((name,), None, 1)
    if not following.single:
        # Its value is one word or several, once expanded: the command after it is not known.
        return ReadOption(
            (name,), None, 2, f"{program} {name} is given {following.text}, not known before it runs"
        )
    return ReadOption((name,), following.text if following.static else None, 2)

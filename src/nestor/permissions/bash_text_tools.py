"""awk and sed programs that run commands: ``awk 'BEGIN{system("rm f")}'``, ``sed 'e rm f'``.

Both are text tools a careful user allows, and both can run a command line from their program:
awk with ``system()``, a pipe to or from a command (``print | "cmd"``, ``"cmd" | getline``), an
extension (``@load``) or a program read from a file (``-f``), and writes a file with a print
redirection (``print > "f"``); GNU sed with its ``e`` command and the ``e`` flag of ``s``, or a
script read from a file. Such a program makes the line unjudgeable (a program is judged only as
written in the line: one that is an expansion is not known). Other interpreters (``python -c``,
``perl -e``, ``node -e``) are what an allow rule for them allows; they are out of this scope.
"""

from __future__ import annotations

import re

from nestor.permissions.bash_options import OptionSyntax, read_option
from nestor.permissions.bash_words import Word

AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
_AWK_VALUES = frozenset("Fvf")  # POSIX: -F fs, -v assignment, -f progfile
_AWK_FILE_OPTIONS = ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load", "-W")
_AWK_SANDBOX = ("-S", "--sandbox")
_AWK_PRINT = re.compile(r"\bprintf?\b")
_AWK_COMMAND = re.compile(r"\bsystem\s*\(|@load\b|@include\b")
# After these, a "/" starts a regular expression rather than a division.
_REGEX_CONTEXT = frozenset("(,~!&|{};\n=?:")


def awk_reason(words: list[Word]) -> str:
    """Why the awk command ``words`` runs a command or writes a file its line does not show, or ""."""
    name = words[0].text
    args = words[1:]
    programs: list[Word] = []  # gawk's -e/--source, each a piece of one program
    index = 0
    while index < len(args):
        word = args[index]
        text = word.text
        if text == "--":
            index += 1
            break
        if not text.startswith("-") or text == "-":
            break
        if text.startswith(_AWK_FILE_OPTIONS):
            return f"{name} {text[:2]} reads code from a file"
        if text in _AWK_SANDBOX:
            return ""  # gawk refuses system(), pipes and redirections
        if text in ("-e", "--source") or text.startswith("--source="):
            programs.append(Word(text.partition("=")[2], True) if "=" in text else _at(args, index + 1))
            index += 1 if "=" in text else 2
            continue
        index += 2 if text[1:2] in _AWK_VALUES and len(text) == 2 else 1
    if not programs and index < len(args):
        programs.append(args[index])
    for program in programs:
        if not program.static:
            return f"{name} is given the program {program.text}, which is not known before it runs"
        if reason := _awk_program_reason(name, program.text):
            return reason
    return ""


def _at(args: list[Word], index: int) -> Word:
    return args[index] if index < len(args) else Word("", True)


def _awk_program_reason(name: str, program: str) -> str:
    code = _awk_code(program)
    if _AWK_COMMAND.search(code) or re.search(r"(?<!\|)\|(?!\|)", code):
        return f"{name}'s program runs commands"
    for statement in re.split(r"[;\n{}]", code):
        match = _AWK_PRINT.search(statement)
        if match and _unparenthesised(statement[match.end() :], ">"):
            return f"{name}'s program writes to a file"
    return ""


def _awk_code(program: str) -> str:
    """``program`` with its strings and regular expressions blanked, so only its code is searched."""
    out: list[str] = []
    index = 0
    previous = "\n"
    while index < len(program):
        char = program[index]
        if char == '"' or (char == "/" and previous in _REGEX_CONTEXT):
            end = index + 1
            while end < len(program) and program[end] != char:
                end += 2 if program[end] == "\\" else 1
            out.append(char + " " * (min(end, len(program)) - index - 1) + char)
            index = end + 1
            previous = "x"
            continue
        out.append(char)
        if not char.isspace():
            previous = char
        index += 1
    return "".join(out)


def _unparenthesised(text: str, wanted: str) -> bool:
    depth = 0
    for index, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if char == wanted and depth == 0 and text[index + 1 : index + 2] != "=":
            return True
    return False


_SED = OptionSyntax(
    "bsnrzuEe:f:l:i::",
    "binary debug expression= file= follow-symlinks help in-place=? line-length= null-data zero-terminated "
    "posix "
    "quiet silent regexp-extended sandbox separate unbuffered version",
)


def sed_reason(words: list[Word]) -> str:
    """Why the sed command ``words`` runs a command (``e``, ``s///e``) or reads its script from a file."""
    scripts: list[Word] = []
    operands: list[Word] = []
    args = words[1:]
    index = 0
    while index < len(args):
        word = args[index]
        if word.text == "--":
            operands.extend(args[index + 1 :])
            break
        if not (word.static and word.single):
            # GNU sed reads options after its operands too: "$f" or * may be --expression=...
            return f"sed is given {word.text}, which may be an option that runs a command once expanded"
        if not word.text.startswith("-") or word.text == "-":
            operands.append(word)
            index += 1
            continue
        option = read_option("sed", _SED, args, index)
        if option.problem:
            return option.problem
        if "--sandbox" in option.names:
            return ""  # e, r and w are refused
        if {"-f", "--file"}.intersection(option.names):
            return "sed reads its script from a file"
        if {"-e", "--expression"}.intersection(option.names[-1:]) and option.value is not None:
            scripts.append(Word(option.value, True))
        index += option.consumed
    if not scripts and operands:
        scripts.append(operands[0])
    for script in scripts:
        if not script.static:
            return f"sed is given the script {script.text}, which is not known before it runs"
        if _sed_executes(script.text):
            return "sed's script runs commands (its e command)"
    return ""


_SED_ADDRESS = re.compile(r"\s*(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/[IM]*|\\(.)(?:(?!\1).|\\.)*\1[IM]*)?")


def _sed_executes(script: str) -> bool:
    """True when the sed script has an ``e`` command or an ``s`` command with the ``e`` flag.

    Commands are read one by one past their addresses; one nestor cannot read counts as running.
    """
    index = 0
    length = len(script)
    while index < length:
        while index < length and script[index] in " \t\n;{}!":
            index += 1
        if index >= length:
            return False
        if script[index] == "#":
            index = _line_end(script, index)
            continue
        for _ in range(2):  # an address, and after a comma a second one
            index = _SED_ADDRESS.match(script, index).end()  # type: ignore[union-attr]
            if script[index : index + 1] != ",":
                break
            index += 1
        while index < length and script[index] in " \t!":
            index += 1
        if index >= length:
            return False
        command = script[index]
        index += 1
        if command == "e":
            return True
        if command in "aicrRwW:btTvlLqQ":
            index = _line_end(script, index) if command in "aicrRwW:" else _until(script, index, ";\n}")
        elif command in "sy":
            if index >= length:
                return True
            delimiter = script[index]
            index = _skip_delimited(script, index + 1, delimiter, 2)
            if command == "s":
                flags_end = _until(script, index, ";\n}w")
                if "e" in script[index:flags_end]:
                    return True
                index = (
                    _line_end(script, flags_end) if script[flags_end : flags_end + 1] == "w" else flags_end
                )
        elif command not in "=dDgGhHnNpPxzF{}":
            return True
    return False


def _line_end(script: str, index: int) -> int:
    end = script.find("\n", index)
    return len(script) if end < 0 else end


def _until(script: str, index: int, stops: str) -> int:
    while index < len(script) and script[index] not in stops:
        index += 1
    return index


def _skip_delimited(script: str, index: int, delimiter: str, parts: int) -> int:
    while index < len(script) and parts:
        if script[index] == "\\":
            index += 2
            continue
        if script[index] == delimiter:
            parts -= 1
        index += 1
    return index

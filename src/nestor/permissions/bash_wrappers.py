"""Wrappers such as ``env``, ``timeout`` or ``sudo``: the command each one runs, found in its words.

``sudo -u me env A=1 timeout 5 rm x`` runs ``rm x``: each wrapper's options are read with its own
option table (:mod:`.bash_options`: short clusters, ``--opt=value``, ``--opt value``, abbreviated
long options, ``--``), its operands skipped (``timeout``'s duration, ``flock``'s lock file), and
what is left is the command it runs, unwrapped in turn. Some wrappers run a shell: ``watch 'a; b'``
and ``flock f -c 'a; b'`` hand a string to ``sh -c``, and ``setarch x86_64`` alone runs a shell
that reads its commands from its input. A wrapper whose command cannot be told (an option nestor
does not know, a value that is an expansion, ``su -c``) is reported with the reason. A wrapper
that runs its command in another directory or under another root (``env -C``, ``chroot``) says
so, for the paths of the line's redirections (:mod:`.bash_path_changes`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from nestor.permissions.bash_options import OptionSyntax, read_option
from nestor.permissions.bash_path_changes import MovedPaths, widest
from nestor.permissions.bash_words import Word, with_placeholder
from nestor.permissions.env_split import split_env_string
from nestor.permissions.variables import assignment_problem, is_assignment

# Wrappers that run their operand with more privilege: an allow rule must name them (sudo apt*),
# so allowing "apt update" never allows "sudo apt update".
PRIVILEGED_WRAPPERS = frozenset({"sudo", "doas", "pkexec", "su", "runuser"})

_MAX_SPLITS = 8
XARGS_INPUT = "{input}"
"""How the words ``xargs`` reads show in the command it runs: ``echo f | xargs rm`` runs ``rm {input}``."""


@dataclass(frozen=True, slots=True)
class _Wrapper:
    """How to find the command a wrapper runs.

    Attributes:
        syntax: Its options.
        operands: Operands before the command (``timeout``'s duration).
        operand: When set, a word is taken as an operand only if it matches (``chrt``'s priority,
            optional in newer versions): otherwise it starts the command.
        first_operand: An operand that may come before the options (``setarch``'s architecture).
        no_command: Options after which it runs no command (``taskset -p``: the rest are pids).
        assignments: ``NAME=value`` words among the options set the command's environment
            (``sudo``; ``env`` takes them after its options).
        shell_without_command: Given no command, it runs a shell reading its input.
        shell_option: An option whose value is a command line run by ``sh -c``.
        unfollowed: Options that make it run a string nestor does not follow (``su -c``).
        elsewhere: Options that run the command in another directory (``env -C``, ``sudo -i``).
        other_root: Options that run it under another root or mounts (``sudo -R``, ``nsenter -m``).
        moves: What it does to the command's paths whatever its options (``chroot``: all).

    """

    syntax: OptionSyntax = field(default_factory=OptionSyntax)
    operands: int = 0
    operand: re.Pattern[str] | None = None
    first_operand: bool = False
    no_command: frozenset[str] = frozenset()
    assignments: bool = False
    shell_without_command: bool = False
    shell_option: str = ""
    unfollowed: frozenset[str] = frozenset()
    elsewhere: frozenset[str] = frozenset()
    other_root: frozenset[str] = frozenset()
    moves: MovedPaths = ""

    def moved_paths(self, options: set[str]) -> MovedPaths:
        """Which paths the command it runs, given ``options``, sees elsewhere than the line does."""
        if self.other_root & options:
            return "all"
        return widest(self.moves, "relative" if self.elsewhere & options else "")


class Stage(NamedTuple):
    """One step of unwrapping.

    Attributes:
        words: The command at this step.
        problem: Why unwrapping it went wrong ("" when it did not).
        moved: What this step's wrapper does to the paths of the command it runs.

    """

    words: list[Word]
    problem: str = ""
    moved: MovedPaths = ""


def _su_like(extra_short: str) -> _Wrapper:
    """``su`` and ``runuser`` (which adds ``-u USER``): a shell, or a string run by one."""
    longs = "command= session-command= fast group= supp-group= login preserve-environment pty shell= user= "
    return _Wrapper(
        OptionSyntax(f"+c:fg:G:lmpPs:{extra_short}hVw:", longs + "whitelist-environment= help version"),
        shell_without_command=True,
        unfollowed=frozenset({"-c", "--command", "--session-command"}),
        elsewhere=frozenset({"-l", "--login"}),
    )


_SETARCH = _Wrapper(
    OptionSyntax(
        "+hVv3BFILRSTXZ",
        "help version verbose 3gb 4gb 32bit fdpic-funcptrs short-inode addr-compat-layout addr-no-randomize "
        "whole-seconds sticky-timeouts read-implies-exec mmap-page-zero uname-2.6 list show=?",
    ),
    first_operand=True,
    no_command=frozenset({"--list", "--show", "--help", "--version", "-h", "-V"}),
    shell_without_command=True,
)
_PERSONALITY = _Wrapper(_SETARCH.syntax, no_command=_SETARCH.no_command, shell_without_command=True)
_RESOURCES = (
    "core data nice fsize sigpending memlock rss nofile msgqueue rtprio stack cpu nproc as locks rttime"
)
_NAMESPACES = "mount uts ipc net pid user cgroup time"

_WRAPPERS: dict[str, _Wrapper] = {
    "command": _Wrapper(OptionSyntax("pvV")),
    "builtin": _Wrapper(),
    "exec": _Wrapper(OptionSyntax("cla:")),
    "env": _Wrapper(
        OptionSyntax(
            "+a:iu:vC:S:0",
            "argv0= ignore-environment unset= chdir= split-string= block-signal=? default-signal=? "
            "ignore-signal=? list-signal-handling debug null help version",
        ),
        elsewhere=frozenset({"-C", "--chdir"}),
    ),
    "nice": _Wrapper(OptionSyntax("+n:", "adjustment= help version")),
    "nohup": _Wrapper(OptionSyntax("+", "help version")),
    "timeout": _Wrapper(
        OptionSyntax("+fk:ps:v", "foreground kill-after= preserve-status signal= verbose help version"),
        operands=1,
    ),
    "xargs": _Wrapper(
        OptionSyntax(
            "+0a:d:E:e::I:i::L:l::n:oP:prs:tx",
            "null arg-file= delimiter= eof=? replace=? max-lines=? max-args= open-tty max-procs= "
            "interactive process-slot-var= no-run-if-empty max-chars= show-limits verbose exit help version",
        )
    ),
    "sudo": _Wrapper(
        OptionSyntax(
            "+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv",
            "askpass auth-type= background bell close-from= login-class= chdir= preserve-env=? edit group= "
            "set-home help host= login remove-timestamp reset-timestamp list no-update non-interactive "
            "preserve-groups prompt= chroot= role= stdin shell type= command-timeout= other-user= user= "
            "version validate",
        ),
        assignments=True,
        shell_without_command=True,
        elsewhere=frozenset({"-D", "--chdir", "-i", "--login"}),
        other_root=frozenset({"-R", "--chroot"}),
    ),
    "doas": _Wrapper(OptionSyntax("+a:C:Lnsu:"), shell_without_command=True),
    # pkexec runs its command in the target user's home (unless --keep-cwd, which older ones lack).
    "pkexec": _Wrapper(
        OptionSyntax("+", "user= disable-internal-agent keep-cwd help version"), moves="relative"
    ),
    "su": _su_like(""),
    "runuser": _su_like("u:"),
    "time": _Wrapper(
        OptionSyntax("+af:o:pqvV", "append format= output= portability quiet verbose help version")
    ),
    "stdbuf": _Wrapper(OptionSyntax("+i:o:e:", "input= output= error= help version")),
    "ionice": _Wrapper(
        OptionSyntax("+c:n:p:P:tu:hV", "class= classdata= pid= pgid= ignore uid= help version"),
        no_command=frozenset(
            {"-p", "--pid", "-P", "--pgid", "-u", "--uid", "-h", "--help", "-V", "--version"}
        ),
    ),
    "setarch": _SETARCH,
    **dict.fromkeys(("linux32", "linux64", "i386", "x86_64", "uname26"), _PERSONALITY),
    "prlimit": _Wrapper(
        OptionSyntax(
            "+" + "".join(f"{letter}::" for letter in "cdefilmnqrstuvxy") + "p:o:hV",
            " ".join(f"{name}=?" for name in _RESOURCES.split())
            + " pid= output= noheadings raw verbose help version",
        ),
        no_command=frozenset({"-p", "--pid", "-h", "--help", "-V", "--version"}),
    ),
    "taskset": _Wrapper(
        OptionSyntax("+acphV", "all-tasks cpu-list pid help version"),
        operands=1,
        no_command=frozenset({"-p", "--pid", "-h", "--help", "-V", "--version"}),
    ),
    "chrt": _Wrapper(
        OptionSyntax(
            "+abdD:fiphmoP:T:rRvV",
            "all-tasks batch deadline sched-deadline= fifo idle pid help max other sched-period= "
            "sched-runtime= rr reset-on-fork verbose version",
        ),
        operands=1,
        operand=re.compile(r"[+-]?\d+"),
        no_command=frozenset({"-p", "--pid", "-m", "--max", "-h", "--help", "-V", "--version"}),
    ),
    "flock": _Wrapper(
        OptionSyntax(
            "+sexnw:E:oFuhV",
            "shared exclusive nonblock nb timeout= wait= conflict-exit-code= close no-fork unlock verbose "
            "help version",
        ),
        operands=1,
    ),
    "unbuffer": _Wrapper(OptionSyntax("p")),
    "setsid": _Wrapper(OptionSyntax("+cfwhV", "ctty fork wait help version")),
    "busybox": _Wrapper(OptionSyntax("+", "list list-full install help")),
    "watch": _Wrapper(
        OptionSyntax(
            "+bcCd::eghn:pq:rs::tvwx",
            "beep color no-color differences=? errexit chgexit interval= precise equexit= no-rerun "
            "shotsdir=? no-title version no-wrap exec help",
        ),
    ),
    "strace": _Wrapper(OptionSyntax("+a:Ab:cCdDe:E:fFhiI:knNo:O:p:P:qrs:S:tTu:U:vVwxX:yYzZ")),
    "ltrace": _Wrapper(OptionSyntax("+a:A:bcCDe:E:fF:hiIl:L:n:o:p:rsS:tTu:vVw:x:")),
    "unshare": _Wrapper(
        OptionSyntax(
            "+fhVmuinpCTUrR:w:S:G:c",
            " ".join(f"{name}=?" for name in _NAMESPACES.split())
            + " fork kill-child=? mount-proc=? map-user= map-group= map-root-user map-current-user map-auto "
            "map-users= map-groups= propagation= setgroups= keep-caps root= wd= setuid= setgid= monotonic= "
            "boottime= help version",
        ),
        shell_without_command=True,
        elsewhere=frozenset({"-w", "--wd"}),
        other_root=frozenset({"-R", "--root", "-m", "--mount"}),
    ),
    "nsenter": _Wrapper(
        OptionSyntax(
            "+ahVt:m::u::i::n::p::C::U::T::S:G:r::w::W:FZ",
            "all target= "
            + " ".join(f"{name}=?" for name in _NAMESPACES.split())
            + " setuid= setgid= preserve-credentials root=? wd=? wdns= no-fork follow-context help version",
        ),
        shell_without_command=True,
        elsewhere=frozenset({"-w", "--wd", "-W", "--wdns"}),
        other_root=frozenset({"-r", "--root", "-m", "--mount", "-a", "--all"}),
    ),
    "chroot": _Wrapper(
        OptionSyntax("+", "groups= userspec= skip-chdir help version"),
        operands=1,
        shell_without_command=True,
        moves="all",
    ),
    "setpriv": _Wrapper(
        OptionSyntax(
            "+dhV",
            "dump nnp no-new-privs ambient-caps= inh-caps= bounding-set= ruid= euid= rgid= egid= reuid= "
            "regid= clear-groups keep-groups init-groups groups= securebits= pdeathsig= selinux-label= "
            "apparmor-profile= "
            "landlock-access= landlock-rule= reset-env help version",
        ),
        no_command=frozenset({"-d", "--dump", "-h", "--help", "-V", "--version"}),
    ),
    "runcon": _Wrapper(OptionSyntax("+ct:u:r:l:", "compute type= user= role= range= help version")),
    "fakeroot": _Wrapper(OptionSyntax("+l:f:i:s:ub:hv", "lib= faked= unknown-is-real fd-base= help version")),
    "script": _Wrapper(
        OptionSyntax(
            "+ac:eE:fI:O:B:T:t::m:o:qhV",
            "append command= echo= return flush force log-in= log-out= log-io= log-timing= timing=? "
            "logging-format= output-limit= quiet help version",
        ),
        shell_without_command=True,
        shell_option="-c --command",
    ),
}


def unwrap(words: list[Word]) -> Iterator[Stage]:
    """Yield the command at each unwrapping step, the last with a reason when it went wrong."""
    current, problem = _drop_assignments(words)
    current = _with_basename(current)
    while not problem and current and current[0].static and current[0].text in _WRAPPERS:
        options: set[str] = set()
        inner, problem = _wrapped_command(current[0].text, current[1:], options)
        if problem or not inner:
            break
        yield Stage(current, "", _WRAPPERS[current[0].text].moved_paths(options))
        current = _with_basename(inner)
    yield Stage(current, problem)


def _drop_assignments(words: list[Word]) -> tuple[list[Word], str]:
    index = 0
    problem = ""
    while index < len(words) and is_assignment(words[index]):
        problem = problem or assignment_problem(words[index].text)
        index += 1
    return words[index:], problem


def _with_basename(words: list[Word]) -> list[Word]:
    if not words or not words[0].static:
        return words
    return [Word(posixpath.basename(words[0].text) or words[0].text, True, words[0].single), *words[1:]]


_NICE_ADJUSTMENT = re.compile(r"-[-+]?\d")


def _wrapped_command(wrapper: str, args: list[Word], seen: set[str]) -> tuple[list[Word], str]:
    """The command ``wrapper`` runs with ``args`` (empty when none), or a reason it cannot be told.

    The options it was given are added to ``seen``.

    Every wrapper here stops reading options at its first operand (getopt's ``+``), as it must to
    pass the command's own options on untouched: options, then operands, then the command.
    """
    spec = _WRAPPERS[wrapper]
    words = list(args)
    if wrapper == "unbuffer":
        return words[1:] if words[:1] == [Word("-p", True)] else words, ""
    index = 1 if spec.first_operand and words and words[0].static and not words[0].text.startswith("-") else 0
    splits = 0
    placeholder = ""  # xargs -I{}: where each input line goes
    while index < len(words):
        word = words[index]
        if not (word.static and word.single):
            return [], f"{wrapper} is given {word.text}, which is not known before it runs"
        text = word.text
        if text == "--":
            index += 1
            break
        if spec.assignments and "=" in text and not text.startswith(("/", "-")):
            # sudo takes NAME=value words among its options (any word with "=" but a path or an option).
            if problem := assignment_problem(text):
                return [], problem
            index += 1
            continue
        if (wrapper == "nice" and _NICE_ADJUSTMENT.match(text)) or (wrapper == "env" and text == "-"):
            index += 1  # nice -5 (an adjustment), env - (an empty environment)
            continue
        if not text.startswith("-") or text == "-":
            break
        if wrapper == "sudo" and text == "-h" and index + 1 < len(words) and _sudo_host(words[index + 1]):
            index += 2  # sudo -h HOST: a word after a lone -h is the host, unless it is an option
            continue
        option = read_option(wrapper, spec.syntax, words, index)
        if option.problem:
            return [], option.problem
        seen.update(option.names)
        if spec.unfollowed.intersection(option.names):
            return [], f"{wrapper} {option.names[-1]} runs a string nestor does not follow"
        if spec.no_command.intersection(option.names):
            return [], ""
        if wrapper == "env" and option.names[-1] in ("-S", "--split-string") and option.value is not None:
            # env -S re-splits its value into words, and reads its options again from the first.
            split = split_env_string(option.value)
            splits += 1
            if split is None or splits > _MAX_SPLITS:
                return [], "env -S is given a string nestor cannot split"
            words = [Word(part, True) for part in split] + words[index + option.consumed :]
            index = 0
            continue
        if option.names[-1] in spec.shell_option.split() and option.value is not None:
            return _shell_string(option.value), ""
        if wrapper == "xargs" and option.names[-1] in ("-I", "-i", "--replace"):
            placeholder = option.value or "{}"
        index += option.consumed
    rest = with_placeholder(words[index:], placeholder)
    if wrapper == "xargs" and not placeholder:
        # xargs runs its command with the words it reads appended: they are its last argument here.
        rest = [*(rest or [Word("echo", True)]), Word(XARGS_INPUT, False, single=False)]
    return _after_options(wrapper, spec, rest, seen)


def _after_options(wrapper: str, spec: _Wrapper, rest: list[Word], seen: set[str]) -> tuple[list[Word], str]:
    """The command among the words after the options: past the operands, the assignments, ``-c``."""
    operands = spec.operands
    while operands and rest and (spec.operand is None or spec.operand.fullmatch(rest[0].text)):
        if not rest[0].single:
            return [], f"{wrapper} is given {rest[0].text}, which is not known before it runs"
        rest = rest[1:]
        operands -= 1
    if wrapper == "env":
        return _env_command(rest)
    if wrapper == "flock" and rest[:1] and rest[0].text in ("-c", "--command"):
        # flock FILE -c STRING: the string goes to the shell.
        if len(rest) != 2:
            return [], ""  # flock refuses it
        if not rest[1].static:
            return [], f"flock -c is given {rest[1].text}, which is not known before it runs"
        return _shell_string(rest[1].text), ""
    if wrapper == "watch" and rest and not seen.intersection({"-x", "--exec"}):
        # watch joins its words and hands them to "sh -c", unless -x says to run them as they are.
        if not all(word.static for word in rest):
            return [], "watch is given words not known before they run"
        return _shell_string(" ".join(word.text for word in rest)), ""
    if not rest and spec.shell_without_command:
        return [], f"{wrapper} runs a shell that reads its commands from its input"
    return rest, ""


def _shell_string(line: str) -> list[Word]:
    return [Word("sh", True), Word("-c", True), Word(line, True)]


def _sudo_host(word: Word) -> bool:
    return not word.text.startswith("-") and not ("=" in word.text and not word.text.startswith("/"))


def _env_command(rest: list[Word]) -> tuple[list[Word], str]:
    """``env``'s assignments (any word with ``=``) come after its options, and the command after them."""
    index = 0
    while index < len(rest) and rest[index].static and "=" in rest[index].text:
        if problem := assignment_problem(rest[index].text):
            return [], problem
        index += 1
    return rest[index:], ""

"""Programs told by an option to run another: ``tar --to-command='rm f'``, ``rsync -e 'rm f;'``.

Such an option hands a command line to a shell nestor does not see, so the line is unjudgeable:
tar's ``--to-command``, ``-I``, ``--checkpoint-action``; rsync's ``-e``; ``sort
--compress-program``; ``man -P``; ``scp -S``, ``sftp -S``/``-D``; ssh's ``ProxyCommand``,
``LocalCommand`` and the like, and ``-F`` (a config file holding them); ``wget --use-askpass``;
ripgrep's ``--pre`` (a preprocessor run on every file searched).
Long options count abbreviated too, and a short one anywhere in a cluster. A word not known before
the line runs (``"$x"``, ``*``: a file may be named ``--to-command=...``) may be such an option,
and so may the words ``xargs`` appends; ``find``, which may be given ``-exec`` that way, is judged
alike (its ``-exec`` written out is parsed by :mod:`.bash_commands`). Programs whose very job
is to run commands they build or schedule (``parallel``, ``at``, ``tmux``, ``screen``,
``systemd-run``, ``entr``, ...) are not followed at all: nestor knows their syntax no better.
"""

from __future__ import annotations

from dataclasses import dataclass

from nestor.permissions.bash_words import Word


@dataclass(frozen=True, slots=True)
class _CommandOptions:
    """The options of one program that name a command (``short``: letters; ``long``: names)."""

    short: str = ""
    long: tuple[str, ...] = ()


_PROGRAMS: dict[str, _CommandOptions] = {
    "tar": _CommandOptions(
        "IF",
        (
            "--to-command",
            "--use-compress-program",
            "--checkpoint-action",
            "--info-script",
            "--new-volume-script",
            "--rsh-command",
            "--rmt-command",
        ),
    ),
    "rsync": _CommandOptions("e", ("--rsh", "--rsync-path")),
    "sort": _CommandOptions("", ("--compress-program",)),
    "zip": _CommandOptions("", ("--unzip-command", "-TT")),
    "man": _CommandOptions("PH", ("--pager", "--html")),
    "wget": _CommandOptions("", ("--use-askpass",)),
    "sdiff": _CommandOptions("", ("--diff-program",)),
    "diff3": _CommandOptions("", ("--diff-program",)),
    "ssh": _CommandOptions("F"),
    "scp": _CommandOptions("FS"),
    "sftp": _CommandOptions("FSD"),
    "find": _CommandOptions(),
    # ripgrep runs a preprocessor on each file it searches (`--pre ./x.sh`): a repository's script.
    "rg": _CommandOptions("", ("--pre",)),
}
_SSH_CLIENTS = frozenset({"ssh", "scp", "sftp"})
# ssh options (-o KEY=VALUE) that run a program or load a library.
_SSH_KEYS = frozenset(
    {
        "proxycommand",
        "localcommand",
        "permitlocalcommand",
        "knownhostscommand",
        "match",
        "include",
        "pkcs11provider",
        "securitykeyprovider",
    }
)
RUNNERS = frozenset(
    {
        "parallel",
        "sem",
        "at",
        "batch",
        "tmux",
        "screen",
        "systemd-run",
        "entr",
        "gdb",
        "valgrind",
        "firejail",
        "bwrap",
        "proot",
        "schroot",
        "numactl",
        "cgexec",
        "trickle",
        "rlwrap",
        "torsocks",
        "torify",
        "proxychains",
        "proxychains4",
        "tsocks",
        "fakechroot",
        "faketime",
        "eatmydata",
        "nocache",
        "chronic",
        "ifne",
        "catchsegv",
        "ssh-agent",
        "dbus-run-session",
        "xvfb-run",
        "sg",
        "perf",
        "expect",
        "chpst",
        "toybox",
    }
)


def command_option_reason(words: list[Word]) -> str:
    """Why the command ``words`` runs another command one of its options names, or ""."""
    name = words[0].text
    if name in RUNNERS:
        return f"{name} runs commands nestor does not follow"
    spec = _PROGRAMS.get(name)
    if spec is None:
        return ""
    args = words[1:]
    for index, word in enumerate(args):
        text = word.text
        if text == "--":
            break
        if not (word.static and word.single):
            return f"{name} is given {text}, which may be an option that runs a command once expanded"
        if _names_command(text, spec) or (name == "tar" and index == 0 and _old_style_cluster(text, spec)):
            return f"{name} {text.split('=', 1)[0]} runs a command"
        value = _ssh_option(args, index) if name in _SSH_CLIENTS else None
        if value is not None and _ssh_key(value) in _SSH_KEYS:
            return f"{name} -o {_ssh_key(value)} runs a command"
    return ""


def _names_command(text: str, spec: _CommandOptions) -> bool:
    if text.startswith("--") and len(text) > 2:
        written = text.split("=", 1)[0]
        return len(written) > 3 and any(option.startswith(written) for option in spec.long)
    if text in spec.long:
        return True
    return (
        text.startswith("-")
        and not text.startswith("--")
        and any(letter in spec.short for letter in text[1:])
    )


def _old_style_cluster(text: str, spec: _CommandOptions) -> bool:
    """``tar cIf prog x.tar``: a first word without a dash is a cluster of options."""
    return not text.startswith("-") and any(letter in spec.short for letter in text)


def _ssh_option(args: list[Word], index: int) -> str | None:
    text = args[index].text
    if text == "-o":
        return args[index + 1].text if index + 1 < len(args) else None
    if text.startswith("-o"):
        return text[2:]
    return None


def _ssh_key(value: str) -> str:
    return value.replace("=", " ").split(maxsplit=1)[0].lower() if value.strip() else ""

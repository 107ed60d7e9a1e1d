"""Wrappers are unwrapped with each tool's real option syntax, so a deny rule sees the command they run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nestor.permissions.bash_commands import parse_command_line
from tests.permissions.bash_support import decide, leaves


def yolo_with_rm_denied(command: str) -> str:
    """The decision under --yolo with ``deny bash(rm *)``: what the red team ran."""
    return decide(command, deny=("bash(rm *)",), yolo=True)


def final(command: str) -> str:
    """The command the line's last simple command runs, unwrapped."""
    return parse_command_line(command).commands[-1].text


# Each line runs "rm f" (checked on this machine below, where the wrapper is installed).
RED_TEAM = [
    "echo f | xargs rm",
    "xargs -a <(echo f) rm",
    "stdbuf --output 0 rm f",
    "ionice --class 2 rm f",
    "setarch x86_64 rm f",
    "linux64 rm f",
    "prlimit --nofile=100 rm f",
]

OPTION_FORMS = [
    # GNU long options: "=value", a separate value, and abbreviations.
    "stdbuf --out 0 rm f",
    "stdbuf --o=0 -e0 -i 0 rm f",
    "ionice -c2 -n 3 -t rm f",
    "timeout --sig KILL 5 rm f",
    "timeout -sKILL --kill=1 5s rm f",
    "nice --adj 5 rm f",
    "nice -5 rm f",
    "nice --5 rm f",
    "prlimit -n100 --cpu=5 rm f",
    "prlimit --nof=100 rm f",
    # setarch and its personality names: options before or after the architecture.
    "setarch x86_64 -R rm f",
    "setarch -R x86_64 rm f",
    "x86_64 --uname-2.6 rm f",
    "i386 -3 rm f",
    "linux32 -BR rm f",
    "uname26 rm f",
    # operands before the command.
    "taskset -c 0 rm f",
    "taskset 1 rm f",
    "chrt --other 0 rm f",
    "chrt -o -- 0 rm f",
    "chrt -b rm f",
    "flock -w 5 /tmp/lock rm f",
    "flock --timeout=5 -E 3 /tmp/lock rm f",
    "flock /tmp/lock -c 'rm f'",
    # env: every option, the argv0 value, a lone "-", its split string.
    "env -a NAME rm f",
    "env --argv0 NAME rm f",
    "env - PATH2=/usr/bin rm f",
    "env -C . -u X rm f",
    "env --block-signal rm f",
    "env --ignore-signal=INT --default-signal rm f",
    "env -v -- rm f",
    "env -0v rm f",
    "env -S'rm f'",
    "env -S'-i A=1 rm' f",
    "env --split-string='rm f'",
    "env -vS'A=1 rm' f",
    "env -S'-u X' -S'rm f'",
    # the others.
    "sudo A=1 rm f",
    "sudo -u root B=2 -n rm f",
    "sudo -h host rm f",
    "sudo --user=root --preserve-env=PATH rm f",
    "unbuffer -p rm f",
    "unbuffer rm f",
    "echo x | xargs -i rm f",
    "echo x | xargs -e rm f",
    "echo x | xargs -l rm f",
    "echo x | xargs --replace rm f",
    "printf 'a\\0' | xargs -0 -r -n1 -P2 -I{} rm f",
    "xargs --max-ar 1 rm f",
    "setsid -w rm f",
    "setpriv --nnp rm f",
    "unshare -r rm f",
    "nsenter -t 1 -m rm f",
    "chroot / rm f",
    "watch -n1 'rm f'",
    "watch -x rm f",
    "script -qc 'rm f' /dev/null",
    "exec -a name rm f",
    "command -p rm f",
    "time -p rm f",
    "nohup -- rm f",
    "doas -u root rm f",
    "strace -f -o /dev/null rm f",
    "builtin exec rm f",
]


@pytest.mark.parametrize("command", RED_TEAM + OPTION_FORMS)
def test_a_denied_command_behind_a_wrapper_is_denied_under_yolo(command: str) -> None:
    assert yolo_with_rm_denied(command) == "deny"


# Lines that run nothing on this machine's versions, or elsewhere than the test's folder.
NOT_RUN_HERE = {"chrt -b rm f", "env -0v rm f", "sudo", "doas", "watch", "nsenter", "chroot", "unbuffer"}


@pytest.mark.parametrize("command", RED_TEAM + OPTION_FORMS)
def test_the_wrapped_lines_really_run_rm(command: str, tmp_path: Path) -> None:
    """Where the wrapper is installed here, the line removes ``f``: the cases are real, not guesses."""
    wrapper = command.split("| ")[-1].split()[0]
    if shutil.which(wrapper) is None or NOT_RUN_HERE.intersection({wrapper, command}):
        pytest.skip(f"{command} does not run rm here (missing, another version, forever, another root)")
    if command.startswith(("env -a", "env --argv0")) and _env_version() < (9, 2):
        pytest.skip("env -a is GNU coreutils 9.2's")
    (tmp_path / "f").write_text("")
    assert not leaves(command, tmp_path, "f"), command


def _env_version() -> tuple[int, ...]:
    first = subprocess.run(["env", "--version"], capture_output=True, text=True, check=False).stdout.split(
        "\n"
    )[0]
    return tuple(int(part) for part in first.rsplit(" ", 1)[-1].split(".") if part.isdigit())


def test_a_deny_rule_with_arguments_covers_the_command_alone() -> None:
    assert yolo_with_rm_denied("rm") == "deny"
    assert yolo_with_rm_denied("find . -name '*.o' | xargs rm") == "deny"
    # An allow rule keeps its exact meaning: "ls *" does not cover a bare "ls".
    assert decide("ls", allow=("bash(ls *)",)) == "ask"


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        ("env -a NAME ls -l", "ls -l"),
        ("env A=1 -i ls", "-i ls"),  # env reads no option after an assignment
        ("stdbuf --output 0 ls", "ls"),
        ("prlimit -n 100 ls", "100 ls"),  # an optional value is attached only
        ("chrt -o ls", "ls"),  # the priority is a number, or absent
        ("timeout 5 -s KILL ls", "-s KILL ls"),  # no option after the first operand
        ("flock /tmp/l -c 'ls -l'", "ls -l"),
        ("watch 'ls; pwd'", "pwd"),
        ("sudo -h host ls", "sudo -h host ls"),  # allow text keeps the privileged wrapper
    ],
)
def test_the_command_found_is_the_one_the_tool_runs(command: str, runs: str) -> None:
    commands = parse_command_line(command).commands
    texts = {c.text for c in commands} | {c.allow_text for c in commands}
    assert runs in texts, commands


@pytest.mark.parametrize(
    "command",
    [
        "stdbuf --bogus 0 rm f",  # an option nestor does not know
        "ionice --cla 2 rm f",  # ambiguous: --class or --classdata
        "timeout $T rm f",  # an unquoted expansion may be several words
        "env -S'${CMD} f'",  # env expands ${CMD} itself
        "env -S'rm \\q'",  # env refuses the string
        "setarch x86_64",  # a shell reading its input
        "echo 'rm f' | linux64 -R",
        "sudo -s",
        "unshare -r",
        'flock /tmp/l -c "$CMD"',
        "watch $CMD",
        "su -c 'rm f'",
        "script -q",
    ],
)
def test_a_wrapper_nestor_cannot_follow_is_not_judged(command: str) -> None:
    line = parse_command_line(command)
    assert line.unresolved, line
    assert yolo_with_rm_denied(command) != "allow"


def test_a_value_that_is_one_word_leaves_the_command_known() -> None:
    assert final('timeout -s "$SIG" 5 rm f') == "rm f"
    assert final("xargs -a <(echo f) rm") == "rm {input}"
    assert final('stdbuf -o "$MODE" rm f') == "rm f"


def test_options_after_the_command_are_the_commands_own() -> None:
    assert final("env ls --unset X") == "ls --unset X"
    assert final("nice ls -n 5") == "ls -n 5"


def test_a_privileged_wrapper_is_still_named_by_the_allow_text() -> None:
    line = parse_command_line("sudo A=1 -u root apt update")
    assert line.commands[-1].text == "apt update"
    assert line.commands[-1].allow_text.startswith("sudo ")


def test_an_assignment_that_changes_what_runs_is_not_judged_behind_a_wrapper() -> None:
    assert parse_command_line("env PATH=. ls").unresolved
    assert parse_command_line("sudo LD_PRELOAD=./x.so ls").unresolved
    assert not parse_command_line("env LANG=C ls").unresolved


# What xargs reads goes on its command's end, or into its -I placeholder; find -exec fills {}.
HIDDEN_BY_INPUT = [
    "echo rm f | xargs env",
    "echo rm f | xargs nice",
    "echo rm f | xargs timeout 5",
    "echo \"-c 'alias.x=!rm f' x\" | xargs git",
    "echo 'rm f' | xargs -I{} sh -c '{}'",
    "echo 'rm f' | xargs -i sh -c '{}'",
    "echo 'rm f' | xargs -I% bash -c '%'",
    "touch 'rm f'; find 'rm f' -exec sh -c {} \\;",
]


@pytest.mark.parametrize("command", HIDDEN_BY_INPUT)
def test_a_command_read_from_input_is_not_judged(command: str, tmp_path: Path) -> None:
    assert yolo_with_rm_denied(command) != "allow"
    assert parse_command_line(command).unresolved, command
    (tmp_path / "f").write_text("")
    assert not leaves(command, tmp_path, "f"), command  # each really runs "rm f"


# -- wrappers that run their command in another directory or under another root -------------------


@pytest.mark.parametrize(
    "command",
    [
        "env -C src sh -c 'echo x >> ../.env'",
        "env --chdir src sh -c 'echo x >> ../.env'",
        "env -iC src sh -c 'echo x >> ../.env'",
        "env -S'-C src sh' -c 'echo x >> ../.env'",
        "sudo -D src sh -c 'echo x >> ../.env'",
        "sudo --chdir=src sh -c 'echo x >> ../.env'",
        "sudo -i sh -c 'echo x >> ../.env'",
        "nsenter --wd=src sh -c 'echo x >> ../.env'",
        "nsenter -wsrc sh -c 'echo x >> ../.env'",
        "unshare -w src sh -c 'echo x >> ../.env'",
        "pkexec sh -c 'echo x >> ../.env'",
        "runuser -l -u me -- sh -c 'echo x >> ../.env'",
        "timeout 5 env -C src sh -c 'echo x >> ../.env'",
    ],
)
def test_a_relative_path_under_a_wrapper_that_changes_directory_is_any_file(command: str) -> None:
    assert [access.path for access in parse_command_line(command).files] == [None], command
    assert decide(command, deny=("edit(.env)",), yolo=True) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "chroot /srv sh -c 'echo x > /etc/passwd'",
        "chroot --skip-chdir /srv sh -c 'echo x > /etc/passwd'",
        "sudo -R /srv sh -c 'echo x > /etc/passwd'",
        "unshare --root=/srv sh -c 'echo x > /etc/passwd'",
        "unshare -m sh -c 'echo x > /etc/passwd'",
        "nsenter -t 1 -m sh -c 'echo x > /etc/passwd'",
    ],
)
def test_every_path_under_a_wrapper_that_changes_root_or_mounts_is_any_file(command: str) -> None:
    assert [access.path for access in parse_command_line(command).files] == [None], command


def test_a_wrapper_that_stays_where_it_is_keeps_the_paths() -> None:
    for wrapper in ("env -i", "timeout 5", "sudo -u me", "nice -n 5"):
        command = f"{wrapper} sh -c 'echo x > f'"
        assert [access.path for access in parse_command_line(command).files] == ["f"], command


def test_env_chdir_really_moves_the_file(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / ".env").write_text("SAFE=1\n")
    command = ["env", "-C", "src", "sh", "-c", "echo x >> ../.env"]
    subprocess.run(command, cwd=tmp_path, check=True, timeout=10)
    assert "x" in (tmp_path / ".env").read_text()

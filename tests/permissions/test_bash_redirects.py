"""A redirection to a file is a write of that file, one from a file a read: the file rules judge them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nestor.permissions.bash_commands import parse_command_line
from nestor.permissions.bash_redirects import FileAccess
from tests.permissions.bash_support import decide as decide_line


def files(command: str) -> list[tuple[str | None, str]]:
    return [(access.path, access.action) for access in parse_command_line(command).files]


def decide(command: str, root: Path, **rules: Any) -> str:
    return decide_line(command, root=root, **rules)


def test_the_files_a_line_opens() -> None:
    assert files("ls > f 2>&1") == [("f", "write")]
    assert files("ls >> f 2>/dev/null &> g &>> h >| i") == [
        ("f", "write"),
        ("g", "write"),
        ("h", "write"),
        ("i", "write"),
    ]
    assert files("cat < in > out") == [("in", "read"), ("out", "write")]
    assert files("ls >& log") == [("log", "write")]
    assert files("cat <> f") == [("f", "read"), ("f", "write")]
    assert files("cat <<EOF > out\nx\nEOF") == [("out", "write")]
    assert files("{ ls; pwd; } > g") == [("g", "write")]
    assert files("while read l; do :; done < in") == [("in", "read")]
    assert files('ls > "$f"') == [(None, "write")]
    assert files("cd sub && ls > f") == [(None, "write")]  # the directory is only known when it runs
    assert files("cd sub && ls > /tmp/f") == [("/tmp/f", "write")]
    assert files("bash -c 'ls > f'") == [("f", "write")]


@pytest.mark.parametrize(
    "command",
    [
        "ls 2>&1",
        "ls >&2",
        "ls 2>&-",
        "ls > /dev/null",
        "ls &> /dev/null",
        "ls > /dev/stderr",
        "cat < /dev/stdin",
        "ls > /dev/fd/3",
        "ls > >(cat)",
        "cat <<< x",
        "cat <<EOF\nx\nEOF",
    ],
)
def test_what_opens_no_file_is_left_out(command: str) -> None:
    assert parse_command_line(command).files == ()


def test_a_redirection_to_a_network_device_is_not_judged() -> None:
    assert parse_command_line("ls > /dev/tcp/example.invalid/80").unresolved


# -- the red-team findings: a read-only allow rule wrote project files -----------------------------


@pytest.mark.parametrize(
    "command", ["ls > f", "git status >> app.py", "ls &> f", "{ ls; } > f", "cat < a > b"]
)
def test_an_allow_rule_for_a_command_does_not_cover_writing_a_file(command: str, tmp_path: Path) -> None:
    assert (
        decide(command, tmp_path, allow=("bash(ls *)", "bash(ls)", "bash(git status*)", "bash(cat *)"))
        == "ask"
    )


def test_writing_the_file_allowed_too_covers_the_line(tmp_path: Path) -> None:
    allow = ("bash(ls *)", "write(logs/**)")
    assert decide("ls -l > logs/out.txt", tmp_path, allow=allow) == "allow"
    assert decide("ls -l > other.txt", tmp_path, allow=allow) == "ask"
    assert decide("ls -l 2>/dev/null", tmp_path, allow=("bash(ls *)",)) == "allow"
    assert (
        decide("ls -l > ~/.bashrc", tmp_path, allow=("bash(ls *)", "edit")) == "ask"
    )  # a bare edit: the project


def test_a_write_rule_refuses_a_redirection_to_the_file_whatever_allows(tmp_path: Path) -> None:
    deny = ("edit(.env)",)
    assert decide("echo x > .env", tmp_path, allow=("bash",), deny=deny) == "deny"
    assert decide("echo x >> ./.env", tmp_path, deny=deny, yolo=True) == "deny"
    assert decide("bash -c 'echo x > .env'", tmp_path, deny=deny, yolo=True) == "deny"
    assert decide("echo x > .env", tmp_path, ask=("Write(.env)",), yolo=True) == "ask"
    assert decide("echo x > other", tmp_path, deny=deny, yolo=True) == "allow"


def test_a_redirection_follows_links_as_the_write_tool_does(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "secret")
    assert decide("echo x > link", tmp_path, deny=("edit(secret)",), yolo=True) == "deny"


def test_an_input_redirection_is_a_read(tmp_path: Path) -> None:
    deny = ("Read(secrets/**)",)
    assert decide("cat < secrets/key.txt", tmp_path, allow=("bash",), deny=deny) == "deny"
    assert (
        decide("cat < notes.txt", tmp_path, allow=("bash(cat*)",)) == "allow"
    )  # reading inside: the default
    assert decide("cat < /etc/hostname", tmp_path, allow=("bash(cat*)",)) == "ask"  # outside: asked


def test_a_file_not_known_before_the_line_runs_is_refused_under_a_file_deny_rule(tmp_path: Path) -> None:
    assert decide('echo x > "$f"', tmp_path, allow=("bash",), deny=("edit(.env)",)) == "deny"
    assert decide('echo x > "$f"', tmp_path, deny=("edit(.env)",), yolo=True) == "deny"
    assert decide('echo x > "$f"', tmp_path, allow=("bash",), ask=("edit(.env)",)) == "ask"
    assert decide('echo x > "$f"', tmp_path, deny=("edit",), yolo=True) == "deny"
    assert decide('echo x > "$f"', tmp_path, allow=("bash(echo *)", "edit")) == "ask"
    assert decide('echo x > "$f"', tmp_path, allow=("bash",)) == "allow"  # no file rule: a bare bash allow


# -- the red team's third pass: a substitution reading a file, a glob in a redirection --------------


def test_a_substitution_reading_a_file_is_a_read(tmp_path: Path) -> None:
    # "$(<f)" is "$(cat < f)": a redirection no command holds.
    assert files("ls $(<secrets/key.txt)") == [("secrets/key.txt", "read")]
    assert set(files('echo "$(< /etc/hostname)" > out')) == {("/etc/hostname", "read"), ("out", "write")}
    careful = {"allow": ("bash(ls *)", "bash(cat *)"), "deny": ("Read(secrets/**)",)}
    assert decide("ls $(<secrets/key.txt)", tmp_path, **careful) == "deny"
    assert decide("ls $(</etc/hostname)", tmp_path, **careful) == "ask"  # outside the project
    assert decide("ls $(<notes.txt)", tmp_path, **careful) == "allow"


@pytest.mark.parametrize(
    "target", ["secre?s/key.txt", "secrets/*.txt", "secrets/[k]ey.txt", "{secrets,x}/key.txt"]
)
def test_a_glob_in_a_redirection_is_any_file(target: str, tmp_path: Path) -> None:
    # bash opens the one file the glob matches when the line runs: never judged as its letters.
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key.txt").write_text("hunter2\n")
    assert files(f"cat < {target}") == [(None, "read")]
    assert decide(f"cat < {target}", tmp_path, allow=("bash(cat *)",), deny=("Read(secrets/**)",)) == "deny"
    assert decide(f"cat < {target}", tmp_path, allow=("bash(cat *)",)) == "ask"


def test_a_glob_in_a_redirection_really_opens_the_file_it_matches(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / ".env").write_text("SAFE=1\n")
    subprocess.run(["bash", "-c", "echo EVIL=1 >> .en?"], cwd=tmp_path, check=True, timeout=10)
    assert "EVIL" in (tmp_path / ".env").read_text()
    assert decide("echo EVIL=1 >> .en?", tmp_path, deny=("edit(.env)",), yolo=True) == "deny"
    assert (
        decide('echo EVIL=1 >> ".en?"', tmp_path, deny=("edit(.env)",), yolo=True) == "allow"
    )  # quoted: the name


def test_a_line_that_cannot_be_judged_is_refused_under_a_file_rule(tmp_path: Path) -> None:
    # What it hides may open any file: "eval" and a line that does not parse hide their redirections.
    for line in ("eval 'echo X >> .env'", "shopt -s extglob\necho X >> @(.env)", "ls ${x-`echo X >> .env`}"):
        assert decide(line, tmp_path, deny=("edit(.env)",), yolo=True) == "deny", line
        assert decide(line, tmp_path, allow=("bash",), ask=("Read(.env)",)) == "ask", line
        assert decide(line, tmp_path, deny=("fetch(https://example.com*)",), yolo=True) == "allow", line


def test_file_access_is_plain_data() -> None:
    assert FileAccess("f", "write") == FileAccess("f", "write")


# -- the red team's fourth pass: paths the shell's own state decides ------------------------------


def test_a_tilde_is_read_as_bash_reads_it() -> None:
    assert files("cat < ~+/secrets/key.txt") == [("./secrets/key.txt", "read")]  # $PWD: where it runs
    assert files("ls > ~+") == [(".", "write")]
    assert files("cat < ~/x") == [("~/x", "read")]  # the home directory: the rules expand it
    assert files("cat < ~root/x") == [("~root/x", "read")]
    for target in ("~-/x", "~-", "~+0/x", "~2/x", "~-1/x", "a=~+/x", "a=b:~/x"):
        assert files(f"cat < {target}") == [(None, "read")], target  # $OLDPWD, the stack, assignments
    for target in ("'~+'/x", '~"+"/x', "\\~+/x", '~+"/x"', "x~+/y"):
        assert files(f"cat < {target}") == [("./~+/x" if target != "x~+/y" else "x~+/y", "read")], target
    assert files("cd sub && cat < ~+/x") == [(None, "read")]  # the directory is only known when it runs


@pytest.mark.parametrize(
    "line", ["echo EVIL=1 >> ~+/.env", "echo EVIL=1 >> a=~+/.env", "cd sub; echo EVIL=1 >> ~-/.env"]
)
def test_a_tilde_redirection_really_opens_what_bash_expands_and_is_judged_so(
    line: str, tmp_path: Path
) -> None:
    import subprocess

    (tmp_path / "sub").mkdir()
    (tmp_path / "a=").symlink_to("/")  # a=~+/.env is a=/<project>/.env: through the link, .env
    (tmp_path / ".env").write_text("SAFE=1\n")
    env = {"PATH": "/usr/bin:/bin", "OLDPWD": str(tmp_path)}
    subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, check=True, timeout=10)
    assert "EVIL" in (tmp_path / ".env").read_text()
    assert decide(line, tmp_path, deny=("edit(.env)",), yolo=True) == "deny"
    assert decide(line, tmp_path, allow=("bash(echo *)", "bash(cd *)"), ask=("edit(.env)",)) == "ask"


def test_a_quoted_tilde_is_a_folder_of_that_name(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    careful = {"allow": ("bash(cat *)",), "deny": ("Read(secrets/**)",)}
    assert decide("cat < ~+/secrets/key.txt", tmp_path, **careful) == "deny"
    assert decide("cat < '~+'/secrets/key.txt", tmp_path, **careful) == "allow"  # ./~+/secrets/key.txt


def test_setting_the_directory_a_tilde_names_makes_the_line_unjudged(tmp_path: Path) -> None:
    for line in ("PWD=secrets; cat < ~+/key.txt", "OLDPWD=secrets; cat < ~-/key.txt", "read PWD; cat < ~+/x"):
        assert decide(line, tmp_path, allow=("bash(cat *)",), deny=("Read(secrets/**)",)) == "deny", line


@pytest.mark.parametrize(
    "line",
    [
        "cd src && echo EVIL=1 >> /proc/self/cwd/../.env",
        "echo EVIL=1 >> /proc/thread-self/cwd/.env",
        "echo EVIL=1 >> /proc/1/root/proj/.env",
        "{ echo EVIL=1 >> /dev/fd/3/.env; } 3< .",
        "echo EVIL=1 >> /dev/stdin/.env < .",
        "exec 3< .; echo EVIL=1 >> /dev/./fd/3/.env",
        "echo EVIL=1 >> here/.env",  # here -> /proc/self/cwd
    ],
)
def test_a_path_through_the_shells_own_process_folder_is_any_file(line: str, tmp_path: Path) -> None:
    # /proc/self and /dev/fd name the shell's cwd and descriptors, which the line sets, not nestor's.
    (tmp_path / "src").mkdir()
    (tmp_path / "here").symlink_to("/proc/self/cwd")
    assert decide(line, tmp_path, deny=("edit(.env)",), yolo=True) == "deny"
    assert decide(line, tmp_path, allow=("bash",), ask=("edit(.env)",)) == "ask"
    assert decide(line, tmp_path, allow=("bash",)) == "allow"  # a bare bash allow covers any file


def test_a_process_folder_path_really_opens_the_shells_file(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "src").mkdir()
    (tmp_path / ".env").write_text("SAFE=1\n")
    line = "cd src && echo EVIL=1 >> /proc/self/cwd/../.env"
    subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True, timeout=10)
    assert "EVIL" in (tmp_path / ".env").read_text()


def test_other_files_of_proc_are_judged_as_files(tmp_path: Path) -> None:
    assert (
        decide("cat < /proc/cpuinfo", tmp_path, allow=("bash(cat *)",), deny=("Read(secrets/**)",)) == "ask"
    )

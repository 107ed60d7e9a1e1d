"""Environment variables that decide what a command runs, and the assignments that set them.

``PATH=. ls`` runs ``./ls``, ``LD_PRELOAD=x.so ls`` loads ``x.so`` into ``ls``, ``BASH_ENV=x.sh
bash -c ls`` runs ``x.sh`` first, ``GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager
GIT_CONFIG_VALUE_0='rm -rf x' git log`` runs ``rm``, and ``PS4='$(rm x)'`` runs it at the next
``set -x`` line. A variable that chooses where a program reads its configuration does as much:
``HOME=. git status`` reads a ``.gitconfig`` the repository holds, whose ``core.fsmonitor`` runs.
A command line that sets one of these (as a prefix, an ``export``, ``env`` or ``sudo`` words,
``read`` or ``printf -v``) runs something no rule saw, so it cannot be judged.

The list holds what points a program at code: the programs it runs, the libraries, modules and
start-up files it loads, the options it reads from the environment when one of them runs a
command (``TAR_OPTIONS=--to-command=...``), and the files and directories it reads its
configuration from, since a config file can name a program to run (git's ``core.fsmonitor``,
ssh's ``ProxyCommand``, ripgrep's ``--pre``, a kubeconfig's ``exec`` plugin, aws's
``credential_process``). ``HOME`` and the XDG base directories locate nearly every program's
config; git reads dozens of ``GIT_*`` variables, and new ones come with new versions (a
repository: ``GIT_DIR``, ``GIT_COMMON_DIR``, ``GIT_WORK_TREE``; config; programs; ``GIT_TRACE``
names a file it writes), so a ``GIT_*`` variable is accepted only when known to do none of this.
"""

from __future__ import annotations

import re

from nestor.permissions.bash_words import Word

_NAMES = frozenset(
    {
        # What a name runs, and code glibc loads into every program (iconv modules).
        "PATH",
        "GCONV_PATH",
        # Code a shell runs on its own: at start-up, before a prompt, in a trace line.
        "BASH_ENV",
        "ENV",
        "ZDOTDIR",
        "SHELLOPTS",
        "BASHOPTS",
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "BASH_LOADABLES_PATH",
        # Programs that other programs run.
        "SHELL",
        "PAGER",
        "MANPAGER",
        "LESSOPEN",
        "LESSCLOSE",
        "EDITOR",
        "VISUAL",
        "FCEDIT",
        "BROWSER",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "SUDO_EDITOR",
        "RSYNC_RSH",
        "RSYNC_CONNECT_PROG",
        # Options read from the environment, among which some that run a command.
        "TAR_OPTIONS",
        "MANOPT",
        "ZIPOPT",
        "GOFLAGS",
        # Where interpreters and toolchains load code from.
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONUSERBASE",
        "PYTHONSTARTUP",
        "PYTHONWARNINGS",
        "GEM_HOME",
        "GEM_PATH",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "CLASSPATH",
        "LUA_INIT",
        "LUA_PATH",
        "LUA_CPATH",
        "GOROOT",
        "GOTOOLCHAIN",
        "VIMINIT",
        "EXINIT",
        # Where programs read their configuration (a config file can name a program to run).
        "HOME",
        "GOENV",
        "RIPGREP_CONFIG_PATH",
        "WGETRC",
        "CURL_HOME",
        "GNUPGHOME",
        "KUBECONFIG",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "DOCKER_CONFIG",
        "HGRCPATH",
        "CARGO_HOME",
        # The directories a redirection's ~+ and ~- name (bash reads the variables, not the cwd).
        "PWD",
        "OLDPWD",
    }
)
# LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH, ...: the dynamic loader's; XDG_CONFIG_HOME,
# XDG_CONFIG_DIRS, XDG_DATA_DIRS, ...: where programs find config, plugins and completions;
# npm's npm_config_* (any case: npm reads both); and BASH_FUNC_ls%%, a function bash defines from
# its environment (env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls).
_PREFIXES = ("LD_", "XDG_", "NPM_CONFIG_", "BASH_FUNC_")
# GIT_* variables known to choose no repository, config, program or file: who and when, prompts,
# pathspec magic, locks.
_QUIET_GIT = frozenset(
    {
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_TERMINAL_PROMPT",
        "GIT_MERGE_AUTOEDIT",
        "GIT_OPTIONAL_LOCKS",
        "GIT_FLUSH",
        "GIT_LITERAL_PATHSPECS",
        "GIT_GLOB_PATHSPECS",
        "GIT_NOGLOB_PATHSPECS",
        "GIT_ICASE_PATHSPECS",
        "GIT_REFLOG_ACTION",
        "GIT_ADVICE",
        "GIT_DEFAULT_HASH",
        "GIT_NO_REPLACE_OBJECTS",
    }
)
_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)(\[[^\]]*\])?\+?=")


def runs_code(name: str) -> bool:
    """True when setting the variable ``name`` changes what a command runs, or the config it reads."""
    if name in _NAMES or name.upper().startswith(_PREFIXES):
        return True
    return name.startswith("GIT_") and name not in _QUIET_GIT


def variable_problem(name: str) -> str:
    """Why setting ``name`` makes a line unjudgeable, or "" when it does not."""
    if runs_code(name):
        return f"it sets {name}, which changes what commands run or the config they read"
    return ""


def is_assignment(word: Word) -> bool:
    """True for a static ``NAME=value`` word (what ``env`` and ``sudo`` take as an assignment)."""
    name, equals, _ = word.text.partition("=")
    return word.static and bool(equals) and name.isidentifier()


def assignment_problem(text: str) -> str:
    """Why the assignment ``text`` (``NAME=value``, ``NAME+=value``) makes a line unjudgeable, or "".

    ``env`` and ``sudo`` take any word with ``=`` as an assignment, names bash would refuse included.
    """
    match = _ASSIGNMENT.match(text)
    return variable_problem(match.group(1) if match else text.split("=", 1)[0])

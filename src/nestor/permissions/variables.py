"""Environment variables that decide what a command runs, and the assignments that set them.

``PATH=. ls`` runs ``./ls``, ``LD_PRELOAD=x.so ls`` loads ``x.so`` into ``ls``, ``BASH_ENV=x.sh
bash -c ls`` runs ``x.sh`` first, ``GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager
GIT_CONFIG_VALUE_0='rm -rf x' git log`` runs ``rm``, and ``PS4='$(rm x)'`` runs it at the next
``set -x`` line. A command line that sets one of these (as a prefix, an ``export``, ``env`` or
``sudo`` words, ``read`` or ``printf -v``) runs something no rule saw, so it cannot be judged.
"""

from __future__ import annotations

import re

from nestor.permissions.bash_words import Word

_NAMES = frozenset(
    {
        # What a name runs, and what is loaded into every program.
        "PATH",
        "LD_PRELOAD",
        "LD_AUDIT",
        "LD_LIBRARY_PATH",
        # Code bash runs on its own: at start-up, before a prompt, in a trace line.
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "BASH_LOADABLES_PATH",
        # Programs that other programs run, or load code from.
        "PAGER",
        "MANPAGER",
        "LESSOPEN",
        "LESSCLOSE",
        "EDITOR",
        "VISUAL",
        "BROWSER",
        "SSH_ASKPASS",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "NODE_OPTIONS",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        # git: config from the environment, and the programs it runs.
        "GIT_EXEC_PATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_ASKPASS",
        "GIT_PROXY_COMMAND",
        "GIT_EXTERNAL_DIFF",
        "GIT_TEMPLATE_DIR",
    }
)
# GIT_CONFIG, GIT_CONFIG_GLOBAL, GIT_CONFIG_COUNT, GIT_CONFIG_KEY_0, ...; and BASH_FUNC_ls%%, a
# function bash defines from its environment (env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls).
_PREFIXES = ("GIT_CONFIG", "BASH_FUNC_")
_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)(\[[^\]]*\])?\+?=")


def runs_code(name: str) -> bool:
    """True when setting the variable ``name`` changes what a command runs."""
    return name in _NAMES or name.startswith(_PREFIXES)


def variable_problem(name: str) -> str:
    """Why setting ``name`` makes a line unjudgeable, or "" when it does not."""
    if runs_code(name):
        return f"it sets {name}, which changes what commands run"
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

"""git options that run commands: ``git -c alias.x='!rm f' x`` runs ``rm f``.

Many of git's config keys name a program it runs (``core.fsmonitor``, ``core.pager``,
``core.sshCommand``, ``alias.*`` with ``!``, ``filter.*``, ``diff.*.textconv``, ``credential.helper``,
``include.path`` which reads more of them, ...), and new ones come with new versions: a key given
with ``-c`` or ``--config-env`` is accepted only when it is known to name no program (the list
below); any other makes the line unjudgeable. So do ``--exec-path=DIR`` (where git finds its
commands), ``--git-dir`` and ``--work-tree`` (a repository of the line's choosing, whose config
runs) and the options of subcommands that take a command (``rebase --exec``, ``bisect run``,
``submodule foreach``, ``--upload-pack``, ``--template``, ...). The same keys set through the
environment (``GIT_CONFIG_*``) are caught by :mod:`.variables`.
"""

from __future__ import annotations

from nestor.permissions.bash_words import Word

# Sections none of whose keys name a program (subsections included: color.diff.*, branch.x.*).
_SAFE_SECTIONS = frozenset(
    {
        "user",
        "author",
        "committer",
        "color",
        "column",
        "advice",
        "i18n",
        "status",
        "log",
        "pretty",
        "grep",
        "blame",
        "tag",
        "branch",
        "pull",
        "push",
        "fetch",
        "rebase",
        "commit",
        "gc",
        "maintenance",
        "pack",
        "index",
        "feature",
        "checkout",
        "clone",
        "rerere",
        "stash",
        "versionsort",
        "am",
        "apply",
        "safe",
        "fsck",
        "transfer",
    }
)
# Sections whose two-part keys name no program (their three-part keys may: diff.<driver>.command).
_SAFE_TWO_PART = frozenset({"merge", "diff"})
_SAFE_KEYS = frozenset(
    {
        "core.quotepath",
        "core.autocrlf",
        "core.safecrlf",
        "core.eol",
        "core.filemode",
        "core.ignorecase",
        "core.abbrev",
        "core.precomposeunicode",
        "core.symlinks",
        "core.longpaths",
        "core.whitespace",
        "core.commentchar",
        "core.commentstring",
        "core.trustctime",
        "core.checkstat",
        "core.untrackedcache",
        "core.preloadindex",
        "core.bigfilethreshold",
        "core.compression",
        "core.logallrefupdates",
        "core.warnambiguousrefs",
        "init.defaultbranch",
        "protocol.version",
        "interactive.singlekey",
    }
)
_UNSAFE_KEYS = frozenset({"diff.external", "merge.tool", "diff.tool", "diff.guitool", "merge.guitool"})
# git's own options before the subcommand; those taking a value take the next word unless "=" is given.
_GLOBAL_FLAGS = frozenset(
    {
        "-p",
        "--paginate",
        "-P",
        "--no-pager",
        "--bare",
        "--no-replace-objects",
        "--no-lazy-fetch",
        "--no-optional-locks",
        "--no-advice",
        "--literal-pathspecs",
        "--no-literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--html-path",
        "--man-path",
        "--info-path",
        "--exec-path",
        "-v",
        "--version",
        "-h",
        "--help",
    }
)
_GLOBAL_VALUES = frozenset(
    {
        "-C",
        "-c",
        "--config-env",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--super-prefix",
        "--list-cmds",
        "--attr-source",
        "--shallow-file",
    }
)
_REPOSITORY_OPTIONS = frozenset({"--git-dir", "--work-tree"})
# Subcommand options that take a command (long ones may be abbreviated, as git allows).
_COMMAND_OPTIONS: dict[str, tuple[str, ...]] = {
    "rebase": ("-x", "--exec"),
    "difftool": ("-x", "--extcmd"),
    "clone": ("-u", "--upload-pack", "--template", "-c", "--config"),  # -c: config of the new repository
    "init": ("--template",),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "ls-remote": ("--upload-pack",),
    "archive": ("--exec",),
    "push": ("--receive-pack", "--exec"),
    "grep": ("-O", "--open-files-in-pager"),
    "send-email": ("--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd"),
}
_ALWAYS = frozenset({"filter-branch", "filter-repo", "instaweb"})
_SUBCOMMAND_WORDS = {"submodule": "foreach", "bisect": "run"}


def git_reason(words: list[Word]) -> str:
    """Why the ``git`` command ``words`` runs a command no rule sees, or ""."""
    index, reason = _subcommand_index(words)
    if reason or index >= len(words):
        return reason
    if not words[index].static:
        return f"git is given the command {words[index].text}, which is not known before it runs"
    return _subcommand_reason(words[index].text, words[index + 1 :])


def git_subcommand(words: list[Word]) -> str:
    """The subcommand the ``git`` command ``words`` runs (``git -C x status``: ``status``), or ""."""
    index, reason = _subcommand_index(words)
    return words[index].text if not reason and index < len(words) and words[index].static else ""


def _subcommand_index(words: list[Word]) -> tuple[int, str]:
    """Where git's own options end in ``words``, and why they run a command no rule sees ("" if not)."""
    index = 1
    while index < len(words) and words[index].text.startswith("-"):
        word = words[index]
        if not word.static:
            return index, f"git is given {word.text}, which is not known before it runs"
        option, equals, value = word.text.partition("=")
        if option not in _GLOBAL_FLAGS | _GLOBAL_VALUES:
            return index, f"git {option} is not an option nestor knows"
        if option == "--exec-path" and equals:
            return index, "git --exec-path decides where git finds the commands it runs"
        if option in _REPOSITORY_OPTIONS:
            # As GIT_DIR and GIT_WORK_TREE do (:mod:`.variables`): a repository whose config and
            # attributes may name programs (filters, textconv, diff.external).
            return index, f"git {option} chooses the repository git reads"
        if option in _GLOBAL_VALUES and not equals:
            index += 1
            if index >= len(words):
                return index, ""
            if not words[index].static:
                return index, f"git {option} is given {words[index].text}, which is not known before it runs"
            value = words[index].text
        if option in ("-c", "--config-env") and (reason := config_reason(value)):
            return index, reason
        index += 1
    return index, ""


def config_reason(setting: str) -> str:
    """Why the git setting ``section.key=value`` (as ``-c`` takes it) may run a program, or ""."""
    key = setting.split("=", 1)[0]
    section, _, rest = key.partition(".")
    subsection, _, variable = rest.rpartition(".")
    normal = f"{section.lower()}.{variable.lower()}"
    if not variable or normal in _UNSAFE_KEYS:
        return f"git -c {key} may name a program git runs"
    if section.lower() in _SAFE_SECTIONS or (
        not subsection and (normal in _SAFE_KEYS or section.lower() in _SAFE_TWO_PART)
    ):
        return ""
    return f"git -c {key} may name a program git runs"


def _subcommand_reason(subcommand: str, args: list[Word]) -> str:
    if subcommand in _ALWAYS:
        return f"git {subcommand} runs commands it is given"
    word = _SUBCOMMAND_WORDS.get(subcommand)
    if word is not None and any(arg.text == word for arg in args):
        return f"git {subcommand} {word} runs the command it is given"
    options = _COMMAND_OPTIONS.get(subcommand, ())
    for arg in args:
        text = arg.text
        if text == "--":
            break
        if not arg.static and options:
            # Its value may be one of the options below (a word xargs appends, too).
            return f"git {subcommand} is given {text}, which is not known before it runs"
        if _names_option(text, options):
            return f"git {subcommand} {text.split('=', 1)[0]} runs the command it is given"
    return ""


def _names_option(text: str, options: tuple[str, ...]) -> bool:
    if text.startswith("--"):
        written = text.split("=", 1)[0]
        return len(written) > 3 and any(
            option.startswith(written) for option in options if option.startswith("--")
        )
    if text.startswith("-") and len(text) > 1:
        return any(option[1] in text[1:] for option in options if not option.startswith("--"))
    return False

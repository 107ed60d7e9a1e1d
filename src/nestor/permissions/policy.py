"""Turning a tool call's permission request into a decision.

Order of precedence: a matching ``deny`` rule, then a matching ``ask`` rule, then a matching
``allow`` rule, then a grant the user gave earlier in this session, then ``--yolo``, then the
defaults (reads inside the project are allowed; reads outside it, writes, commands and network
access ask). Deny and ask rules hold even with ``--yolo``: a rule written down is a decision
the user already made (an ask rule asks in the REPL; a headless run, where nobody can answer,
denies the call and tells the model that ``--yolo`` does not override ask rules).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Literal

from nestor.core.permission import PermissionRequest
from nestor.permissions.rules import Rule, RuleAction, find_rule, parse_rule, unjudged_rule
from nestor.tools.git.location import GIT_DIR_NAME, find_repository

DecisionKind = Literal["allow", "ask", "deny"]


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome for one request, and why (shown to the user and, when denied, to the model).

    Attributes:
        kind: allow, ask or deny.
        reason: One line, e.g. ``rule deny bash(rm *)`` or ``changing files needs approval``.
        rule: The rule that decided, when one did.
        must_ask: Only a person may answer this question: no mode of a UI answers it by itself
            (a write into a git dir, which ``--yolo``, grants and allow rules leave asked too).

    """

    kind: DecisionKind
    reason: str
    rule: Rule | None = None
    must_ask: bool = False


@dataclass
class PermissionPolicy:
    """Rules plus session grants; one policy per agent session tree.

    Attributes:
        rules: Parsed rules from configuration, in the order written.
        project_root: Used to match project-relative path patterns.
        yolo: Allow everything that no deny or ask rule covers.

    """

    rules: list[Rule] = field(default_factory=list[Rule])
    project_root: str = "/"
    yolo: bool = False
    _grants: set[tuple[str, str]] = field(default_factory=set[tuple[str, str]])

    @classmethod
    def from_config(
        cls,
        allow: Iterable[str],
        ask: Iterable[str],
        deny: Iterable[str],
        *,
        project_root: str,
        yolo: bool = False,
        source: str = "config",
    ) -> PermissionPolicy:
        """Build a policy from the ``[permissions]`` lists of the settings."""
        rules: list[Rule] = []
        groups: list[tuple[RuleAction, Iterable[str]]] = [("deny", deny), ("ask", ask), ("allow", allow)]
        for action, texts in groups:
            rules.extend(parse_rule(action, text, source=source) for text in texts)
        return cls(rules=rules, project_root=project_root, yolo=yolo)

    def decide(self, request: PermissionRequest) -> Decision:
        """Return the decision for ``request`` under the rules, grants and defaults.

        Writing into a repository's git dir (a hook, its config) is asked even where a rule,
        a grant or ``--yolo`` would allow it, unless an allow rule names a ``.git`` path itself:
        what is written there runs at the user's next ``git``, as the sandbox keeps commands out.
        """
        into_git = request.action == "write" and writes_into_git_dir(request.target, self.project_root)
        for action in ("deny", "ask", "allow"):
            rule = find_rule(self.rules, action, request, self.project_root)
            if rule is not None and not (
                action == "allow" and into_git and GIT_DIR_NAME not in (rule.pattern or "")
            ):
                return Decision(action, f"rule {action} {rule}", rule)
            if (
                action == "ask"
                and (unjudged := unjudged_decision(self.rules, request, self.project_root)) is not None
            ):
                return unjudged
        if into_git:
            return Decision(
                "ask",
                f"{request.target} is inside a repository's .git: what is written there runs at the next git",
                must_ask=True,
            )
        if (request.tool_name, request.grant_key) in self._grants or (request.tool_name, "*") in self._grants:
            return Decision("allow", "allowed for this session")
        if self.yolo:
            return Decision("allow", "--yolo")
        if request.action == "read" and not request.outside_project:
            return Decision("allow", "reading inside the project")
        return Decision("ask", _default_reason(request))

    def withholds(self, request: PermissionRequest) -> bool:
        """True when a rule keeps ``request`` from going ahead unasked: a deny, or an ask rule.

        Used for what a tool finds on its own (a file among grep's matches): such a file is left
        out of the results rather than asked about, one question per file being no answer.
        """
        decision = self.decide(request)
        return decision.kind == "deny" or (decision.kind == "ask" and decision.rule is not None)

    def grant_for_session(self, request: PermissionRequest) -> None:
        """Allow calls like ``request`` (same tool and grant key) for the rest of the session."""
        self._grants.add((request.tool_name, request.grant_key))


_PLAIN_COMMANDS = (
    "write each command it runs plainly (no eval, source, evaluating expansions or unknown wrappers)"
)
_PLAIN_FILES = (
    "; name each file it redirects to plainly (no glob, variable or change of directory), and move, link "
    "or remove files in a call of their own"
)


def unjudged_decision(
    rules: Sequence[Rule], request: PermissionRequest, project_root: str
) -> Decision | None:
    """Refuse (or ask about) a command line that cannot be judged when a deny or ask rule might cover it.

    ``X=rm; $X -rf y`` or ``eval 'rm -rf y'`` hide the command a deny rule names, and
    ``ln -s .env x; echo >> x`` the file a write rule names: no allow rule, session grant or
    ``--yolo`` may let such a line through while a rule says what must not run or be opened.
    Under a deny rule with a pattern the line is refused (the model is told to write each command
    plainly); under an ask rule it is asked.
    """
    rule = unjudged_rule(rules, request, project_root)
    if rule is None:
        return None
    if rule.action == "deny":
        advice = _PLAIN_COMMANDS
        if not rule.governs(request.tool_name):
            advice += _PLAIN_FILES  # a file rule: the files the line opens must be known too
        reason = f"the command cannot be judged before it runs, and rule deny {rule} may cover it: {advice}"
        return Decision("deny", reason, rule)
    reason = f"the command cannot be judged before it runs, and rule {rule.action} {rule} may cover it"
    return Decision("ask", reason, rule)


def writes_into_git_dir(target: str, project_root: str) -> bool:
    """Whether the path ``target`` lies in a git dir.

    A ``.git`` anywhere on the path counts, and so do the git dir and common dir of a repository
    holding the project that live elsewhere (a linked worktree's).
    """
    path = PurePath(target)
    if GIT_DIR_NAME in path.parts:
        return True
    return any(path.is_relative_to(git_dir) for git_dir in _outside_git_dirs(project_root))


@functools.lru_cache(maxsize=16)
def _outside_git_dirs(project_root: str) -> tuple[Path, ...]:
    dirs: list[Path] = []
    start = Path(project_root)
    while (repository := find_repository(start)) is not None and repository.git_dir not in dirs:
        dirs += [repository.git_dir, repository.common_dir]
        if repository.work_tree.parent == repository.work_tree:
            break
        start = repository.work_tree.parent
    return tuple(dirs)


def _default_reason(request: PermissionRequest) -> str:
    if request.outside_project:
        return f"{request.target} is outside the project"
    return {
        "read": "reading needs approval",
        "write": "changing files needs approval",
        "execute": "running commands needs approval",
        "network": "network access needs approval",
    }[request.action]

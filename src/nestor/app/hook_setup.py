"""Which hooks a process runs: the user's, the embedder's, and a project's the user approved.

The user's own hooks (``[hooks]`` in ``config.toml``, ``~/.claude/settings.json``) run as they are.
A project's (a trusted folder's ``nestor.toml``, ``.claude/settings.json``,
``.claude/settings.local.json``; an untrusted folder's are never read) run only once the user
approved each exact hook: an approval is stored by the hook's hash in the same store as MCP
servers' (:class:`~nestor.store.approvals.Approvals`, kind ``hook``), so a changed hook is asked
about again and ``nestor trust`` or ``--trust`` approve none; a hook declined is stored too, and
not asked about again until it changes. A hook not approved is skipped, and
the run names the skipped hooks in one line; ``nestor hooks approve``, the REPL's and the TUI's
question before they start, or the editor's before the first prompt (``nestor acp``,
:meth:`HookApprovals.ask_pending`) approves them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from nestor.agents.registry import AgentRegistry, project_registry
from nestor.app.approval_questions import AskYesNo, approval_question
from nestor.config.hooks import ConfiguredHook
from nestor.config.settings import Settings
from nestor.core.errors import StoreError
from nestor.core.permission import PermissionRequest
from nestor.runtime.features.hook_events.agent_hook import AgentInfo, EventHook
from nestor.runtime.features.hook_events.dispatcher import HookDispatcher
from nestor.runtime.features.hook_events.outcome import HookOutcome
from nestor.store.approvals import Approvals, ApprovalState
from nestor.store.db import open_database
from nestor.tools.catalogue import ToolCatalogue

HookState = Literal["user", "approved", "declined", "changed", "new"]
"""``user``: the user's own hook, which needs no approval; else a project hook's approval."""

ASKED: frozenset[HookState] = frozenset({"new", "changed"})
"""The states a question is asked about: a hook declined is not asked about again as it is."""


@dataclass(frozen=True, slots=True)
class ListedHook:
    """One configured hook and whether it runs (``nestor hooks list``)."""

    hook: ConfiguredHook
    state: HookState


class HookApprovals:
    """The configured hooks of a process, and the user's approvals of a project's.

    Args:
        settings: The settings (their :attr:`~nestor.config.settings.Settings.configured_hooks`).
        approvals: Where approvals are stored.
        agent_hooks: Reads the agent files' own hooks (each for its agent alone), when listed.
        notify: Names, in one line, an agent file's hook that did not run.

    """

    def __init__(
        self,
        settings: Settings,
        approvals: Approvals,
        agent_hooks: Callable[[], Sequence[ConfiguredHook]] = tuple,
        *,
        notify: Callable[[str], None] = lambda _line: None,
    ) -> None:
        self._hooks = settings.configured_hooks
        self._agent_hooks = agent_hooks
        self._approvals = approvals
        self._root = Path(settings.project_root)
        self._notify = notify
        self._named: set[str] = set()

    def listed(self) -> list[ListedHook]:
        """Every configured hook and every agent file's, with its state.

        Raises:
            StoreError: The database failed.

        """
        return [ListedHook(hook, self.state(hook)) for hook in (*self._hooks, *self._agent_hooks())]

    def allows(self, hook: ConfiguredHook) -> bool:
        """Whether an agent file's ``hook`` may run; one not approved is named once, in one line."""
        try:
            runs = self.state(hook) in ("user", "approved")
        except StoreError as error:
            runs, reason = False, error.message
        else:
            reason = ""
        if not runs and hook.digest not in self._named:
            self._named.add(hook.digest)
            self._notify(f"hook {hook.name} did not run: {reason}" if reason else skipped_line([hook]))
        return runs

    def state(self, hook: ConfiguredHook) -> HookState:
        """Whether ``hook`` runs: the user's own, approved, or not (changed since, or never).

        Raises:
            StoreError: The database failed.

        """
        if not hook.project:
            return "user"
        approval: ApprovalState = self._approvals.state("hook", self._root, hook.name, hook.digest)
        return approval

    def approve(self, hook: ConfiguredHook) -> None:
        """Record the user's approval of ``hook`` as it is now.

        Raises:
            StoreError: The database failed.

        """
        self._approvals.approve("hook", self._root, hook.name, hook.digest)

    def decline(self, hook: ConfiguredHook) -> None:
        """Record that the user declined ``hook`` as it is now: it is not asked about again.

        Raises:
            StoreError: The database failed.

        """
        self._approvals.decline("hook", self._root, hook.name, hook.digest)

    async def ask_pending(self, ask: AskYesNo) -> list[ConfiguredHook]:
        """Ask about each hook never approved or changed (a project's, an agent file's), one each.

        A yes and a no are both stored; the hooks not approved (declined now or before) are named
        in one line (and not again when an agent file's would run). Returns the configured hooks
        approved now, which the running dispatcher does not hold yet (an agent file's are read
        when its agent is built).

        Raises:
            StoreError: The database failed.

        """
        approved: list[ConfiguredHook] = []
        declined: list[ConfiguredHook] = []
        for listed in self.listed():
            if listed.state in ASKED:
                if await ask(hook_approval_request(listed)):
                    approved.append(listed.hook)
                else:
                    self.decline(listed.hook)
                    declined.append(listed.hook)
            elif listed.state == "declined":
                declined.append(listed.hook)
        for hook in approved:
            self.approve(hook)
        self._named.update(hook.digest for hook in declined)
        if declined:
            self._notify(skipped_line(declined))
        return [hook for hook in approved if hook in self._hooks]

    def runnable(self) -> tuple[list[ConfiguredHook], list[ConfiguredHook]]:
        """The hooks that run, and the project's that do not for want of approval.

        Raises:
            StoreError: The database failed.

        """
        run: list[ConfiguredHook] = []
        skipped: list[ConfiguredHook] = []
        for hook in self._hooks:
            (run if self.state(hook) in ("user", "approved") else skipped).append(hook)
        return run, skipped


def hook_approval_request(listed: ListedHook) -> PermissionRequest:
    """The yes/no question about a project's hook not approved: its command is the request's target."""
    hook = listed.hook
    changed = ", changed since you approved it" if listed.state == "changed" else ""
    description = f"Run the project's hook {hook.name}{changed} (it runs as you, outside the sandbox)"
    return approval_question("hook", hook.command, description)


def skipped_line(skipped: Sequence[ConfiguredHook]) -> str:
    """The one line that names a project's hooks that did not run, and what to do."""
    names = "; ".join(f"{hook.name}: {hook.command}" for hook in skipped[:5])
    more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
    return (
        f"{len(skipped)} project hook{'s' if len(skipped) != 1 else ''} not approved, skipped: "
        f"{names}{more}; `nestor hooks approve` shows and approves them"
    )


async def test_event(
    dispatcher: HookDispatcher,
    settings: Settings,
    event: str,
    *,
    tool: str | None = None,
    tool_input: dict[str, Any] | None = None,
    catalogue: ToolCatalogue | None = None,
) -> HookOutcome:
    """Fire ``event`` once on a sample payload, as the main agent would (``nestor hooks test``)."""
    from nestor.runtime.features.hook_events.payload import hook_tool_input

    root = Path(settings.project_root)
    catalogue = catalogue or ToolCatalogue()
    names = catalogue.hook_names
    if tool is not None and tool not in catalogue:  # a Claude Code name (Bash): the tool it names
        tool = catalogue.named_by_hooks(tool) or tool
    agent = AgentInfo("test-session", "test-session", "coder", None, 0, root)
    fields: dict[str, Any] = {}
    match: tuple[str, ...] = ()
    if tool is not None:
        match = names(tool)
        shown = hook_tool_input(tool, tool_input or {}, root)
        fields = {"tool_name": match[-1], "nestor_tool_name": tool, "tool_input": shown}
        if event == "PostToolUse":
            fields["tool_response"] = {"content": "", "success": True}
        elif event == "PostToolUseFailure":
            fields["error"] = "sample failure"
    elif event == "UserPromptSubmit":
        fields["prompt"] = "sample prompt"
    elif event in ("Stop", "SubagentStop"):
        fields = {"stop_hook_active": False, "last_assistant_message": ""}
    hook = EventHook(dispatcher, agent, names, notify=lambda _line: None)
    payload = hook.payload(event, **fields)
    if tool is not None:
        payload["tool_use_id"] = "test-call"
    return await dispatcher.fire(event, payload, match=match, tool_use_id=payload.get("tool_use_id"))


def agent_file_hooks(registry: AgentRegistry, settings: Settings) -> list[ConfiguredHook]:
    """The agent files' own hooks: the user's files', and a trusted project's files' (to approve)."""
    return [
        hook
        for spec in registry.specs()
        for hook in spec.hooks
        if settings.project_trusted or not hook.project
    ]


@contextmanager
def opened_hook_approvals(settings: Settings, env: Mapping[str, str] = os.environ) -> Iterator[HookApprovals]:
    """The configured hooks, the agent files', and the user's approvals (the database closed after).

    Raises:
        StoreError: The database cannot be opened.

    """
    registry = project_registry(Path(settings.project_root), env, trusted=settings.project_trusted)
    with open_database(settings.database_path) as database:
        yield HookApprovals(settings, Approvals(database), lambda: agent_file_hooks(registry, settings))


def pending_hooks(settings: Settings) -> list[ListedHook]:  # the REPL's question, nestor hooks approve
    """The project's hooks not approved as they are now (never approved, declined, or changed since).

    Raises:
        StoreError: The database fails.

    """
    with opened_hook_approvals(settings) as approvals:
        return [listed for listed in approvals.listed() if listed.state not in ("user", "approved")]


def decline_hooks(settings: Settings, hooks: Sequence[ConfiguredHook]) -> None:
    """Record that the user declined each of ``hooks`` as it is now.

    Raises:
        StoreError: The database fails.

    """
    with opened_hook_approvals(settings) as approvals:
        for hook in hooks:
            approvals.decline(hook)


def approve_hooks(settings: Settings, hooks: Sequence[ConfiguredHook]) -> None:
    """Record the user's approval of each of ``hooks`` as it is now.

    Raises:
        StoreError: The database fails.

    """
    with opened_hook_approvals(settings) as approvals:
        for hook in hooks:
            approvals.approve(hook)

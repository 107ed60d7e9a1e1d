"""Usage rolled up the agent tree: the one place for its arithmetic and its policy.

A session's stored totals are its own usage plus every descendant's: the store adds each
response's usage to the session and to all its ancestors in the same transaction as the message
(``add_usage_statement`` in ``store/rollup.py``; that SQL stays with the store). What the rest
of nestor asks of those totals is answered here:

- what one run of an agent spent, its sub-agents' included: what its session's total gained
  (:meth:`TreeUsage.gained`; a ``task`` result's usage);
- what one prompt of a conversation spent: the main agent's runs plus what its sub-agents'
  totals gained (:meth:`TreeUsage.prompt`); the session's own total would also count the title,
  written in the background;
- what the whole tree has cost, and the cost cap that stops every agent of it
  (:func:`cost_cap_stop`, :class:`TreeCostHook`, ``[agents] max_cost_usd``).

The request, token and time budgets a tree shares are counted in memory, as requests are made,
by the kernel's :class:`~nestor.runtime.kernel.hooks.TreeBudget`. The arithmetic of one
:class:`~nestor.core.usage.Usage` (sums, differences, an unknown cost) is ``core/usage.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from nestor.core.usage import Usage
from nestor.runtime.kernel.hooks import Hook, HookAction, RunState, Stop

if TYPE_CHECKING:
    from nestor.store.sessions import SessionStore


class TreeUsage:
    """Reads an agent tree's usage from the store's rolled-up totals.

    Args:
        sessions: The session store, whose totals include every descendant's.

    """

    def __init__(self, sessions: SessionStore) -> None:
        self._sessions = sessions

    def total(self, session_id: str) -> Usage:
        """What the session and every descendant of it spent so far."""
        return self._sessions.get(session_id).usage

    def gained(self, session_id: str, before: Usage) -> Usage:
        """What the session's total gained since ``before`` (its :meth:`total` then)."""
        return self.total(session_id).minus(before)

    def cost(self, session_id: str) -> float | None:
        """What the session and its descendants cost so far; None while nothing had a price."""
        return self.total(session_id).cost_usd

    def children(self, session_id: str) -> Usage:
        """What the session's descendants spent so far, without the session's own usage."""
        total = Usage()
        for child in self._sessions.children(session_id):
            total.add(child.usage)
        return total

    def prompt(self, session_id: str, *, main_runs: Usage, children_before: Usage) -> Usage:
        """What one prompt of a main agent spent: its runs, and what its sub-agents gained.

        ``children_before`` is :meth:`children` as it was when the prompt was sent.
        """
        return main_runs + self.children(session_id).minus(children_before)


def cost_cap_stop(spent: float | None, max_cost_usd: float) -> Stop | None:
    """The stop of an agent whose tree has spent ``spent`` dollars against the cap, or None.

    An unknown cost (no request had a price) counts as nothing spent: the cap bounds what is known.
    """
    spent_usd = spent or 0.0
    if spent_usd < max_cost_usd:
        return None
    return Stop(
        "token_budget",
        f"Stopped: the agent tree has spent ${spent_usd:.4f} (max_cost_usd = {max_cost_usd:g}).",
    )


class TreeCostHook(Hook):
    """Stops every agent of a tree once the tree's total cost reaches ``max_cost_usd``.

    Args:
        max_cost_usd: The cap.
        tree_cost: Returns the root session's total cost so far (:meth:`TreeUsage.cost`).

    """

    def __init__(self, max_cost_usd: float, tree_cost: Callable[[], float | None]) -> None:
        self.max_cost_usd = max_cost_usd
        self._tree_cost = tree_cost

    async def before_request(self, state: RunState) -> HookAction:
        """Stop before a request once the cap is reached."""
        return cost_cap_stop(self._tree_cost(), self.max_cost_usd)

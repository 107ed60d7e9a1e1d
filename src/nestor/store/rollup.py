"""Usage rolled up the session tree: the SQL that adds usage to a session and its ancestors.

A session's token and cost columns hold its own usage plus that of every descendant, so a
parent's totals are live while its sub-agents run. The walk up the tree follows ``parent_id``
links; :data:`LINEAGE_IDS` is the same walk, for checks (a cycle) rather than updates.
"""

from __future__ import annotations

from typing import Any

from nestor.core.usage import USAGE_COUNTS, Usage

_ADD_USAGE_ASSIGNMENTS = ", ".join(f"{column} = {column} + ?" for column in USAGE_COUNTS)

# Walks parent_id links up from one session; UNION (not UNION ALL) stops on a cycle. The WITH sits
# inside the WHERE because the sqlite3 module reports no rowcount for a statement starting with WITH.
_ADD_USAGE_TO_LINEAGE = f"""
    UPDATE sessions SET {_ADD_USAGE_ASSIGNMENTS},
        cost_usd = CASE WHEN ? IS NULL THEN cost_usd ELSE coalesce(cost_usd, 0) + ? END,
        updated_at = ?
    WHERE id IN (
        WITH RECURSIVE lineage(id, parent_id) AS (
            SELECT id, parent_id FROM sessions WHERE id = ?
            UNION
            SELECT sessions.id, sessions.parent_id
            FROM sessions JOIN lineage ON sessions.id = lineage.parent_id
        )
        SELECT id FROM lineage
    )
"""

LINEAGE_IDS = """
    WITH RECURSIVE lineage(id, parent_id) AS (
        SELECT id, parent_id FROM sessions WHERE id = ?
        UNION
        SELECT sessions.id, sessions.parent_id FROM sessions JOIN lineage ON sessions.id = lineage.parent_id
    )
    SELECT id FROM lineage
"""

_ADD_USAGE_TO_ONE = f"""
    UPDATE sessions SET {_ADD_USAGE_ASSIGNMENTS},
        cost_usd = CASE WHEN ? IS NULL THEN cost_usd ELSE coalesce(cost_usd, 0) + ? END,
        updated_at = ?
    WHERE id = ?
"""


def add_usage_statement(session_id: str, usage: Usage, *, now: float, roll_up: bool) -> tuple[str, list[Any]]:
    """The SQL and parameters adding ``usage`` to a session (and, when ``roll_up``, its ancestors).

    Shared by :meth:`SessionStore.add_usage` and by :meth:`MessageStore.append`, which runs it in
    the same transaction as the response it stores, so totals never disagree with the messages.
    """
    counts = [getattr(usage, column) for column in USAGE_COUNTS]
    statement = _ADD_USAGE_TO_LINEAGE if roll_up else _ADD_USAGE_TO_ONE
    return statement, [*counts, usage.cost_usd, usage.cost_usd, now, session_id]

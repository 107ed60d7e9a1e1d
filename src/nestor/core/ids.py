"""Sortable, unique identifiers for sessions, agents and tasks.

An id is ``<prefix>_<12 hex digits of milliseconds><8 random hex digits>``: ids made later sort
after ids made earlier (to the millisecond), which keeps listings in creation order without a
separate timestamp column, and the random tail keeps ids made in the same millisecond distinct.
"""

from __future__ import annotations

import secrets
import time


def new_id(prefix: str) -> str:
    """Return a new sortable id such as ``ses_018f3a2b4c5d9e8f7a6b``."""
    millis = time.time_ns() // 1_000_000
    return f"{prefix}_{millis:012x}{secrets.token_hex(4)}"


def new_session_id() -> str:
    """Return a new session id (also the id of the agent that runs the session)."""
    return new_id("ses")

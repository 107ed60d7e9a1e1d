"""nestor's application layer: the composition root and the UI facade.

UIs (the CLI, a TUI, an ACP server, an SDK) import from here and from ``nestor.core`` only:

- :class:`App` opens a project's stores, models and tools from ``Settings``;
  :meth:`App.conversation` starts (or resumes) the main agent and returns its
  :class:`Conversation`, and :meth:`App.subscribe` delivers the events of every agent.
- :class:`Conversation` runs prompts (queued while busy), waits for background agents
  (:meth:`Conversation.run_to_completion` returns an :class:`Outcome`), stops, compacts, and
  answers permission questions by id.

Names are imported on first use: ``nestor sessions list`` should not pay for the runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nestor.app.conversation import Conversation, Outcome, title_from_prompt
    from nestor.app.notices import ignored_settings_notices
    from nestor.app.root import App
    from nestor.runtime.kernel.setup import RunResult
    from nestor.store.sessions import Session

__all__ = [
    "App",
    "Conversation",
    "Outcome",
    "RunResult",
    "Session",
    "ignored_settings_notices",
    "title_from_prompt",
]

_HOMES = {
    "App": "nestor.app.root",
    "ignored_settings_notices": "nestor.app.notices",
    "Conversation": "nestor.app.conversation",
    "Outcome": "nestor.app.conversation",
    "title_from_prompt": "nestor.app.conversation",
    "RunResult": "nestor.runtime.kernel.setup",
    "Session": "nestor.store.sessions",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'nestor.app' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)

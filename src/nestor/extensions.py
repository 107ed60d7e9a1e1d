"""Where nestor is extended: the base classes and protocols a user implements, in one place.

- A tool: subclass :class:`Tool` (its ``name``, ``description``, pydantic ``params_model`` and
  ``run(params, ctx)`` with the :class:`ToolContext`, returning text or a :class:`ToolResult`),
  then register its factory on the app's catalogue: ``app.catalogue.register("name", MyTool,
  traits=["read_only"])`` (:class:`ToolCatalogue`, :data:`Trait`); agents whose spec names the
  tool get it.
- A hook: subclass :class:`Hook` (every method a no-op until overridden; :class:`RunState` is
  what it reads, :class:`Stop` and :class:`Remind` what it returns, :data:`HookAction` the
  union) and pass it to ``App.conversation(hooks=[...])``.
- A web search engine: anything with ``async search(query, max_results) -> list[SearchHit]``
  (:class:`SearchBackend`), set as ``app.tools.search_backend``.

Agents (Markdown files in ``.nestor/agents/``) and providers (``[providers.*]`` in the config)
are extended by configuration, not code. The other protocols of the code base (``Compactor``,
``Harness``, ``HarnessHost``, ``ChildBuilder``, ``ModelSource``, ``ToolSource``, ``TextEngine``,
``PermissionAsker``) are internal seams between nestor's own layers and may change without notice.

Names are imported on first use, so importing this module costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nestor.runtime.kernel.hooks import Hook, HookAction, Remind, RunState, Stop
    from nestor.tools.base import Tool, ToolContext, ToolResult
    from nestor.tools.catalogue import ToolCatalogue, Trait
    from nestor.tools.search_backends import SearchBackend, SearchHit

_HOMES: dict[str, str] = {
    **dict.fromkeys(["Hook", "HookAction", "Remind", "RunState", "Stop"], "nestor.runtime.kernel.hooks"),
    **dict.fromkeys(["SearchBackend", "SearchHit"], "nestor.tools.search_backends"),
    **dict.fromkeys(["Tool", "ToolContext", "ToolResult"], "nestor.tools.base"),
    **dict.fromkeys(["ToolCatalogue", "Trait"], "nestor.tools.catalogue"),
}

__all__ = [
    "Hook",
    "HookAction",
    "Remind",
    "RunState",
    "SearchBackend",
    "SearchHit",
    "Stop",
    "Tool",
    "ToolCatalogue",
    "ToolContext",
    "ToolResult",
    "Trait",
]


def __getattr__(name: str) -> Any:
    """Import an extension point from its home on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

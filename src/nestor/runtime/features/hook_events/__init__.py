"""Claude Code's hook protocol for every agent of the tree: shell hooks and in-process callbacks.

``dispatcher.py`` runs the hooks of an event (``HookMatcher``, ``HookCallback``), ``command.py``
makes a shell hook a callback, ``outcome.py`` reads their JSON answers, ``matching.py`` their
matchers, ``payload.py`` a tool call as they see it, and ``agent_hook.py`` fires the events from
an agent's hook points.
"""

"""The agent kernel: one agent's loop, the model call, history, hooks and tool execution.

Imports nothing from ``tree``, ``features`` or ``factory`` (import-linter checks it).
"""

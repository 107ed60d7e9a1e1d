"""nestor's SDK: the Claude Agent SDK's ``query``, ``Client`` and messages, over the app facade, in process.

Import its names from :mod:`nestor.api` (``from nestor.api import query, AgentOptions``); the
modules here are ``types.py`` (messages, content blocks, agent definitions, permission results),
``options.py`` (:class:`AgentOptions` and what it makes of nestor's settings and agent specs),
``messages.py`` (events as messages, for the whole agent tree), ``permissions.py`` (questions
answered by ``permission_mode`` and ``can_use_tool``) and ``client.py`` (``query``, ``Client``).
"""

"""``nestor acp``: nestor as an Agent Client Protocol agent for editors (Zed, JetBrains, Neovim, Emacs).

Only that command imports this package's modules: they import the ACP SDK, whose generated schema
costs most of a second to load. ``server.py`` answers the client, ``session.py`` runs one session,
``updates.py`` turns events into updates (the agent tree included), ``permissions.py`` sends
permission questions to the editor, ``history.py`` replays a stored session.
"""

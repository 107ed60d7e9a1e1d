"""The command line (headless runs, the REPL, the TUI, ``nestor acp``, sessions and models commands).

The top layer, beside ``api`` and ``extensions``; it imports only ``app``, ``core`` and ``config``.
"""

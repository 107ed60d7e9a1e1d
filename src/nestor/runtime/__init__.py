"""The agent loop and everything that composes it: ``kernel``, ``tree``, ``features``, ``factory``.

A layer above ``permissions``, ``agents`` and ``checkpoints``, below ``app`` (the layers:
``docs/architecture.md``).
"""

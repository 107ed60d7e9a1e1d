"""Agent specs (frozen data), the registry, and readers for agent files.

A layer above ``tools``, beside ``permissions`` and ``checkpoints`` (the layers: ``docs/architecture.md``).
"""

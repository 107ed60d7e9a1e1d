"""``"provider:model"`` strings to pydantic-ai models, credentials, and usage with cost.

A layer above ``core``, beside ``store``, ``config`` and ``bus`` (the layers: ``docs/architecture.md``).

- :mod:`nestor.providers.catalogue` — the known providers, their environment variables, key checks.
- :mod:`nestor.providers.build` — :func:`~nestor.providers.build.build_model`, one provider's SDK
  imported only when that provider is built.
- :mod:`nestor.providers.usage` — a response's tokens and cost as :class:`~nestor.core.usage.Usage`.
- :mod:`nestor.providers.retry` — when and how long to wait before retrying a failed request.

This ``__init__`` imports nothing, so ``import nestor.providers`` stays cheap.
"""

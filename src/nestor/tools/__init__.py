"""The tools agents call.

A layer above ``providers``, ``store``, ``config`` and ``bus``, below ``permissions`` and ``agents``.

One module per tool, with the model-facing description in a ``.md`` file beside it.
"""

"""Layer 2: the tools agents call.

One module per tool, with the model-facing description in a ``.md`` file beside it.
"""

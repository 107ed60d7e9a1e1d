"""Layer 2: the tools agents call, one module each, with the model-facing description in a ``.md`` beside it."""

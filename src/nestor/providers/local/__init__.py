"""The ``local`` provider: a GGUF model run in process by llama.cpp, and the bundled default model.

- :mod:`nestor.providers.local.loader` — ``local:...`` to a ready model: the file (a path, or the
  bundled model), its header, the engine, and whether it is small enough for the compact profile.
- :mod:`nestor.providers.local.gguf` — reads a GGUF file's header (architecture, context length,
  chat template, special tokens, parameter count) without llama.cpp and without reading weights.
- :mod:`nestor.providers.local.weights` — finds the bundled model's installed parts, joins them
  once into the models directory, verifies size and sha256, and reuses the file after.
- :mod:`nestor.providers.local.engine` — llama.cpp on one worker thread, streaming tokens.
- :mod:`nestor.providers.local.text_engine` — what a generation yields (the prompt's size, text,
  the end), the engine's options and errors, and the ``TextEngine`` protocol the model needs.
- :mod:`nestor.providers.local.llama_context` — llama.cpp's context through its C API: prompt
  tokens, a prefix's KV cells saved and restored, the fill-in-the-middle markers.
- :mod:`nestor.providers.local.prefix_cache` — the evaluated system turn saved on disk, so a new run
  loads it instead of evaluating thousands of tokens again.
- :mod:`nestor.providers.local.model` — the pydantic-ai ``Model``: renders the prompt, finds tool
  calls in any of the three forms small models write, and generates them under a grammar.
- :mod:`nestor.providers.local.chat_format` — pydantic-ai messages to the model's chat template.
- :mod:`nestor.providers.local.tool_calls` — tool calls read from text; the JSON schema of a call.
- :mod:`nestor.providers.local.visible_text` — what the user sees while a response streams.

This ``__init__`` imports nothing, so ``import nestor.providers.local`` stays cheap.
"""

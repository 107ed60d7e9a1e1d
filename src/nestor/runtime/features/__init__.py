"""Features composed into agents through hooks and tools.

Compaction, titles, todos, large results, agentic fetch, agent drafts, and the small-model
harness (``small/``).
"""

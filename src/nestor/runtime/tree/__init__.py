"""The agent tree: delegation, background agents, the pool, sub-agent results, hooks and prompts.

Built on the kernel; never imports ``features`` or ``factory``.
"""

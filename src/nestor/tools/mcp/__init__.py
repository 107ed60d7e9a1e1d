"""MCP servers' tools, as ``mcp__<server>__<tool>`` in the tool catalogue.

The client (``connection``), the servers of a process or an agent (``servers``), one tool of a
server (``tool``), its results (``results``) and the ``mcp__server__tool`` names (``names``).

Only ``names`` is light; the others import the ``mcp`` SDK, so they are imported only when an MCP
server is configured: a run without one never loads the SDK.
"""

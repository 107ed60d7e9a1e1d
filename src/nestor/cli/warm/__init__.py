"""The warm process: ``nestor serve`` keeps nestor imported and forks a child per command.

``run``, ``mcp serve``, ``acp`` and ``batch`` ask it first (:mod:`.client`); the server
(:mod:`.server`) lives in the user's own runtime folder (:mod:`.place`) and serves only its
own user and its own installation.
"""

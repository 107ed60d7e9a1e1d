"""The OS sandbox of the ``bash`` tool: bubblewrap, else Landlock, else none (with a notice).

- :mod:`~nestor.tools.sandbox.policy`: what a command may write and whether it may use the network.
- :mod:`~nestor.tools.sandbox.bwrap`: the ``bwrap`` argv for a policy.
- :mod:`~nestor.tools.sandbox.landlock_exec`: the Landlock launcher (applies a ruleset, then execs).
- :mod:`~nestor.tools.sandbox.detect`: which backend works on this machine.
- :mod:`~nestor.tools.sandbox.launch`: a command's argv and environment under a backend.
"""

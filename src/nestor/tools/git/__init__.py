"""nestor's own git, which runs none of a repository's commands.

- :mod:`~nestor.tools.git.location`: where a repository lies, read from its files.
- :mod:`~nestor.tools.git.runner`: the one way nestor runs git for itself (no repository config,
  hooks, filters or fsmonitor; a read-only, offline sandbox; no secrets in its environment).
"""

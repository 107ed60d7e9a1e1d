"""nestor: a terminal AI coding assistant built around a tree of agents.

Programs that embed nestor import from :mod:`nestor.api` (the supported surface) and extend it
through :mod:`nestor.extensions`. This module imports nothing, so ``import nestor`` stays cheap.
"""

__version__ = "0.1.0"

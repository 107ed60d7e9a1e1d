"""nestor: a terminal AI coding assistant built around a tree of agents."""

__version__ = "0.1.0"

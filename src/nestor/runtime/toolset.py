"""The tool sets agents get."""

from __future__ import annotations

from typing import Any

from nestor.tools.base import Tool


def coder_tools() -> list[Tool[Any]]:
    """Every tool of the main coder agent, in the order the model sees them."""
    from nestor.tools.bash import BashTool
    from nestor.tools.edit import EditTool
    from nestor.tools.fetch import FetchTool
    from nestor.tools.glob import GlobTool
    from nestor.tools.grep import GrepTool
    from nestor.tools.ls import LsTool
    from nestor.tools.view import ViewTool
    from nestor.tools.write import WriteTool

    return [ViewTool(), LsTool(), GlobTool(), GrepTool(), WriteTool(), EditTool(), BashTool(), FetchTool()]


def compact_coder_tools() -> list[Tool[Any]]:
    """The coder's tools for a small model: reading, searching, editing and running, nothing else.

    Every tool definition costs prompt tokens on each request and each extra tool is one more
    for a small model to confuse; ``write`` (``edit`` covers changes) and ``fetch`` are left out.
    """
    from nestor.tools.bash import BashTool
    from nestor.tools.edit import EditTool
    from nestor.tools.glob import GlobTool
    from nestor.tools.grep import GrepTool
    from nestor.tools.ls import LsTool
    from nestor.tools.view import ViewTool

    return [ViewTool(), LsTool(), GlobTool(), GrepTool(), EditTool(), BashTool()]

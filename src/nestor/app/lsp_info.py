"""What UIs show about language servers (``nestor lsp list``), without opening the app.

Resolving the servers starts nothing and imports no pygls; only ``check`` starts them.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from nestor.config.settings import Settings
from nestor.tools.lsp.manager import LspManager, ServerStatus

__all__ = ["LspManager", "ServerStatus", "language_servers", "server_statuses"]


def language_servers(settings: Settings) -> LspManager:
    """The language servers of ``settings``' project (resolved on first use; none started)."""
    return LspManager(
        settings.lsp,
        root=Path(settings.project_root),
        trusted=settings.project_trusted,
        env=os.environ,
        log_dir=settings.data_dir / "lsp" / "logs",  # as MCP servers' logs: <data dir>/mcp/logs
    )


def server_statuses(settings: Settings, *, check: bool = False) -> list[ServerStatus]:
    """Every known and configured server and its state; with ``check``, after starting the project's."""
    manager = language_servers(settings)
    return asyncio.run(manager.check()) if check else manager.statuses()

"""An SDK program's setting in tests: a project, a private home, a model on the scripted loopback server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nestor.api import AgentOptions, Message, ScriptedOpenAIServer, ServerReply, query
from tests.cli.support import clean_env
from tests.server_routes import Route

Routes = dict[str, list[ServerReply | Route]]
"""Each conversation's replies, keyed by the start of its first prompt (``tests.server_routes``)."""

MODEL = "openai-chat:gpt-4o"
"""A priced model (cost is known), served by the scripted server through OPENAI_BASE_URL."""


def project(tmp_path: Path) -> Path:
    """A small project: two files."""
    root = tmp_path / "project"
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.py").write_text("x = 1\n", encoding="utf-8")
    (root / "b.py").write_text("y = 2\n", encoding="utf-8")
    return root


def options(tmp_path: Path, server: ScriptedOpenAIServer, **extra: Any) -> AgentOptions:
    """Options of a program run in ``tmp_path``'s project, its model on ``server``."""
    env = clean_env(tmp_path / "home", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test-key")
    return AgentOptions(**{"cwd": project(tmp_path), "model": MODEL, "env": env, **extra})


async def collect(prompt: str, opts: AgentOptions) -> list[Message]:
    """Every message of ``query(prompt, opts)``."""
    return [message async for message in query(prompt, opts)]

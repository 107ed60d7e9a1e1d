"""Jobs for ``nestor batch`` tests: a scripted server that answers each job by its prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nestor.testing import HTTPErrorReply, ServerReply, ServerToolCall, ServerUsage, first_user_text

MODEL = "openai-chat:gpt-4o"
USAGE = ServerUsage(1000, 100)


def job_step(body: dict[str, Any]) -> ServerReply | HTTPErrorReply:
    """The reply to a job's request, read from its prompt's first word.

    ``WRITE path text``: write the file, then answer; ``FAIL``: a 400 error; ``LOOP``: view files
    until a budget stops it; ``SLOW seconds``: answer after a delay; anything else: a title.
    """
    prompt = first_user_text(body)
    words = prompt.split(" ", 2)
    answered = any(message.get("role") == "tool" for message in body.get("messages", []))
    offers_tools = bool(body.get("tools"))
    if words[0] == "WRITE" and len(words) == 3:
        if answered or not offers_tools:
            return ServerReply(text=f"wrote {words[1]}", usage=USAGE)
        return ServerReply(
            tool_calls=(ServerToolCall("write", {"path": words[1], "content": words[2]}),), usage=USAGE
        )
    if words[0] == "FAIL":
        return HTTPErrorReply(400, {"error": {"message": "this job's request is refused", "type": "invalid"}})
    if words[0] == "LOOP":
        if not offers_tools:
            return ServerReply(text="stopped while reading", usage=USAGE)
        return ServerReply(tool_calls=(ServerToolCall("view", {"path": "README.md"}),), usage=USAGE)
    if words[0] == "SLOW" and len(words) >= 2:
        return ServerReply(text="slow answer", usage=USAGE, delay=float(words[1]))
    return ServerReply(text="A session title", usage=ServerUsage(10, 3))


def steps(count: int = 2000) -> list[Any]:
    """Server steps answering every request with :func:`job_step`."""
    return [job_step] * count


def write_jobs(path: Path, jobs: list[dict[str, Any]]) -> Path:
    """A jobs file holding ``jobs``, one per line."""
    path.write_text("".join(json.dumps(job) + "\n" for job in jobs), encoding="utf-8")
    return path


def read_results(path: Path) -> list[dict[str, Any]]:
    """The results file's records."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

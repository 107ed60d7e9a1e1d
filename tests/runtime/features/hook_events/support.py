"""What the hook tests share: a project on a scripted server, shell hooks written as real scripts."""

from __future__ import annotations

import json
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nestor.api import App, HookMatcher, Outcome, ScriptedOpenAIServer, ServerReply, Settings, load_settings

RECORDER = """#!/bin/sh
# Appends the event's JSON to the log, one line per event, in one write (hooks run in parallel).
payload=$(cat)
printf '%s\\n' "$payload" >> "{log}"
"""


def script(folder: Path, name: str, body: str) -> Path:
    """A real executable shell script."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def hooks_toml(hooks: Mapping[str, Sequence[tuple[str | None, str]]], *, timeout: float | None = None) -> str:
    """``[hooks]`` tables: event -> (matcher, command) pairs."""
    lines: list[str] = []
    for event, entries in hooks.items():
        for matcher, command in entries:
            lines.append(f"[[hooks.{event}]]")
            if matcher is not None:
                lines.append(f"matcher = {json.dumps(matcher)}")
            extra = f", timeout = {timeout}" if timeout is not None else ""
            lines.append(f'hooks = [{{ type = "command", command = {json.dumps(command)}{extra} }}]')
    return "\n".join(lines) + "\n"


@dataclass
class Project:
    """A temp project with a user config, on a scripted chat-completions server."""

    root: Path
    user_config: str = ""
    project_config: str = ""
    trusted: bool = True
    env: dict[str, str] = field(default_factory=dict[str, str])
    context_window: int | None = None

    @property
    def folder(self) -> Path:
        """The project's folder."""
        return self.root / "project"

    @property
    def log(self) -> Path:
        """Where the recorder script appends the events it sees."""
        return self.root / "events.jsonl"

    def recorder(self) -> str:
        """The command of a hook that records every event it gets."""
        return str(script(self.root / "bin", "record.sh", RECORDER.format(log=self.log)))

    def events(self) -> list[dict[str, Any]]:
        """The events the recorder saw, in order."""
        if not self.log.exists():
            return []
        return [
            json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line.strip()
        ]

    def settings(self, base_url: str, *, yolo: bool = False) -> Settings:
        """The settings of a run against ``base_url``."""
        self.folder.mkdir(parents=True, exist_ok=True)
        window = f"context_window = {self.context_window}\n" if self.context_window else ""
        provider = f'[models.large]\nmodel = "scripted:m"\n{window}\n'
        provider += f'[providers.scripted]\ntype = "openai"\nbase_url = "{base_url}"\n'
        user = self.root / "config.toml"
        user.write_text(provider + self.user_config, encoding="utf-8")
        if self.project_config:
            (self.folder / "nestor.toml").write_text(self.project_config, encoding="utf-8")
        env = {"NESTOR_HOME": str(self.root / "home"), "HOME": str(self.root), **self.env}
        return load_settings(
            self.folder, env=env, user_config_path=user, trusted=self.trusted, overrides={"yolo": yolo}
        )

    async def run(
        self,
        replies: Sequence[ServerReply],
        prompt: str = "go",
        *,
        yolo: bool = False,
        callbacks: Mapping[str, Sequence[HookMatcher]] | None = None,
        notices: list[str] | None = None,
    ) -> tuple[Outcome, list[dict[str, Any]]]:
        """Run ``prompt`` headless; the outcome and the request bodies the server got."""
        with ScriptedOpenAIServer(list(replies)) as server:
            app = App.open(
                self.settings(server.base_url, yolo=yolo),
                hooks=callbacks,
                notify=(notices.append if notices is not None else None),
            )
            try:
                conversation = await app.conversation(interactive=False, first_prompt=prompt, env={})
                outcome = await conversation.run_to_completion(prompt)
            finally:
                await app.aclose()
            return outcome, server.requests


def tool_results(request: dict[str, Any]) -> list[str]:
    """The tool results a chat-completions request carries, in order."""
    return [str(message["content"]) for message in request["messages"] if message.get("role") == "tool"]


def user_texts(request: dict[str, Any]) -> list[str]:
    """The user messages' text of a request."""
    texts: list[str] = []
    for message in request["messages"]:
        if message.get("role") != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts.extend(part.get("text", "") for part in content if isinstance(part, dict))
    return texts

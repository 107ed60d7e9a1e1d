"""The composition root: settings in, a ready-to-run main agent out.

Nothing below this layer knows about files on disk besides what it is handed; here the settings
choose the database, the model, the tools, the permission rules and the budgets, and wire them
into a :class:`~nestor.runtime.loop.SessionAgent` registered with the coordinator.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nestor.bus import EventBus
from nestor.config import ModelConfig, ModelRole, Settings, default_user_config_path
from nestor.core.errors import SessionNotFoundError
from nestor.permissions import PermissionPolicy
from nestor.providers.build import BuiltModel, build_model
from nestor.providers.defaults import model_for_role
from nestor.runtime.compaction import SummaryModel
from nestor.runtime.context import ContextPolicy
from nestor.runtime.coordinator import Coordinator
from nestor.runtime.hooks import Budgets, Hook
from nestor.runtime.large_results import LargeResultHook
from nestor.runtime.loop import AgentSetup, SessionAgent
from nestor.runtime.permission_gate import PermissionAsker
from nestor.runtime.prompt import build_system_prompt, builtin_agent_prompt
from nestor.runtime.titles import TitleHook, TitleWriter
from nestor.runtime.toolset import coder_tools, compact_coder_tools
from nestor.store.db import Database, open_database
from nestor.store.messages import MessageStore
from nestor.store.sessions import Session, SessionStore


@dataclass
class App:
    """Open stores, the event bus and the coordinator for one nestor process.

    Attributes:
        titles: Writes the titles of new sessions with the small model; None until a new session
            needs one, and when the small model cannot be built or runs locally. UIs wait for it
            (or cancel it) before the process ends.
        notify: Shows the user a one-line notice (which model was chosen, long first-use work);
            UIs pass their own, the default drops them.

    """

    settings: Settings
    database: Database
    sessions: SessionStore
    messages: MessageStore
    bus: EventBus
    coordinator: Coordinator
    titles: TitleWriter | None = None
    notify: Callable[[str], None] = field(default=lambda _message: None)
    _models: dict[str, BuiltModel] = field(default_factory=dict[str, BuiltModel])
    _local_notice_given: bool = False

    @classmethod
    def open(cls, settings: Settings, *, notify: Callable[[str], None] | None = None) -> App:
        """Open the database named by ``settings`` (creating it on first use)."""
        database = open_database(settings.database_path)
        app = cls(
            settings=settings,
            database=database,
            sessions=SessionStore(database),
            messages=MessageStore(database),
            bus=EventBus(),
            coordinator=Coordinator(),
        )
        if notify is not None:
            app.notify = notify
        return app

    def model_config(self, role: ModelRole, env: Mapping[str, str]) -> ModelConfig:
        """The model of ``role``: the configured one, else (no API key set) the embedded local model.

        Raises:
            ConfigError: No model is configured and the embedded model is not installed, or some
                provider has a key (then the user should say which model to use).

        """
        model_config, embedded = model_for_role(self.settings, role, env)
        if embedded and not self._local_notice_given:
            self._local_notice_given = True
            self.notify(
                "no model configured and no API key set: using the embedded local model "
                f"({model_config.model}); set NESTOR_MODEL=provider:model for a stronger one"
            )
        return model_config

    def build_model(self, model_config: ModelConfig, env: Mapping[str, str]) -> BuiltModel:
        """Build a model once per process: a local model is loaded in memory only once."""
        key = model_config.model_dump_json()
        built = self._models.get(key)
        if built is None:
            built = build_model(model_config, self.settings, env=env, on_progress=self.notify)
            self._models[key] = built
        return built

    def close(self) -> None:
        """Close the database."""
        self.database.close()

    def find_session(self, *, resume: str | None, continue_latest: bool) -> Session | None:
        """Return the session to resume (by id, or this project's latest), or None for a new one."""
        if resume:
            return self.sessions.get(resume)
        if continue_latest:
            latest = self.sessions.latest(str(self.settings.project_root))
            if latest is None:
                raise SessionNotFoundError(
                    f"no session to continue in {self.settings.project_root}",
                    hint='start one with nestor run "prompt"; nestor sessions list shows the others',
                )
            return latest
        return None

    async def start_main_agent(
        self,
        *,
        session: Session | None = None,
        asker: PermissionAsker | None = None,
        title: str = "",
        env: Mapping[str, str] | None = None,
    ) -> SessionAgent:
        """Build the coder agent on ``session`` (or a new session) and make it live."""
        settings = self.settings
        environment = os.environ if env is None else env
        built = self.build_model(self.model_config("large", environment), environment)
        project_root = Path(settings.project_root)
        hooks: list[Hook] = []
        if session is None:
            session = self.sessions.create(
                str(project_root), agent_name="coder", model=built.name, title=title
            )
            hooks.extend(self._title_hooks(environment))
        system_prompt = await build_system_prompt(
            builtin_agent_prompt("coder-compact" if built.compact else "coder"),
            project_root,
            user_config_dir=default_user_config_path(environment).parent,
        )
        policy = PermissionPolicy.from_config(
            settings.permissions.allow,
            settings.permissions.ask,
            settings.permissions.deny,
            project_root=str(project_root),
            yolo=settings.yolo,
        )
        limits = settings.limits
        scratch_dir = self.scratch_dir(session.id)
        context = settings.context
        setup = AgentSetup(
            model=built.model,
            model_name=built.name,
            model_settings=built.settings,
            priced=built.priced,
            system_prompt=system_prompt,
            tools=compact_coder_tools() if built.compact else coder_tools(),
            brief_tools=built.compact,
            sessions=self.sessions,
            messages=self.messages,
            bus=self.bus,
            policy=policy,
            asker=asker,
            project_root=project_root,
            scratch_dir=scratch_dir,
            context=ContextPolicy(
                context_window=built.context_window,
                auto_compact=not context.disable_auto_compact,
                threshold=context.compact_threshold,
                keep_recent=context.keep_recent,
            ),
            # The main agent runs on the large model, which also writes its summaries.
            summarizer=SummaryModel(
                model=built.model,
                name=built.name,
                settings=built.settings,
                priced=built.priced,
                context_window=built.context_window,
            ),
            budgets=Budgets(
                max_iterations=limits.max_iterations,
                max_total_tokens=limits.max_tokens,
                max_time_s=limits.max_time_s,
            ),
            hooks=[LargeResultHook(scratch_dir, context.tool_result_max_tokens), *hooks],
        )
        agent = SessionAgent(session.id, setup)
        self.coordinator.add(agent)
        return agent

    def scratch_dir(self, session_id: str) -> Path:
        """The directory where a session keeps temporary files (large tool results); made on first use."""
        return self.settings.data_dir / "scratch" / session_id

    def delete_session(self, session_id: str) -> None:
        """Delete a session, its sub-agent sessions and their scratch directories.

        Raises:
            SessionNotFoundError: No session has this id.

        """
        lineage = [session_id]
        for current in lineage:  # grows while it is walked: every descendant once
            lineage.extend(child.id for child in self.sessions.children(current))
        self.sessions.delete(session_id)
        for removed in lineage:
            shutil.rmtree(self.scratch_dir(removed), ignore_errors=True)

    def _title_hooks(self, env: Mapping[str, str]) -> list[Hook]:
        """The hook that titles a new session; none when the small model cannot be built."""
        if self.titles is None:
            try:
                small = self.build_model(self.model_config("small", env), env)
            except Exception:  # no credentials for the small model: the first-line title stays
                return []
            if small.in_process:
                # On the CPU, a title costs seconds that the user's next turn would wait for.
                return []
            self.titles = TitleWriter(
                small.model,
                sessions=self.sessions,
                bus=self.bus,
                model_settings=small.settings,
                priced=small.priced,
            )
        return [TitleHook(self.titles, self.messages)]


def title_from_prompt(prompt: str) -> str:
    """A session title from the first line of its first prompt (cut at 80 characters)."""
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else ""
    return first_line if len(first_line) <= 80 else first_line[:77] + "..."

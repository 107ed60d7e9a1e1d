"""The peers ``startup_peers.py`` measures nestor against: how each installs, is pointed at loopback, runs.

Each peer installs into a folder of its own under the bench's cache (``npm install --prefix`` or a
venv, with the evals' own installers, reused once it holds the pinned version) and runs with a home
of its own (``HOME`` and the XDG directories in the bench's temp dir, keys and proxies dropped:
:func:`evals.harnesses.llama_server.peer_environment`), configured for one provider: nestor's
scripted OpenAI-compatible server (chat completions; Codex's Responses API), its scripted
Anthropic server, or its scripted Gemini server (Gemini CLI, through ``GOOGLE_GEMINI_BASE_URL``),
all on 127.0.0.1. Update checks, telemetry, usage statistics and model-list downloads are turned
off, so nothing but the package registries (at install) and loopback is reached.

A peer that cannot be installed, or spoken to on loopback, raises :class:`Skipped` with the reason.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from evals.harnesses.aider import AIDER_VERSION, aider_command, model_metadata
from evals.harnesses.llama_server import ensure_venv, peer_environment
from evals.harnesses.mini_swe_agent import MINI_SWE_AGENT_VERSION
from evals.harnesses.opencode import OPENCODE_VERSION, ensure_npm_package, opencode_config

Api = Literal["openai", "anthropic", "gemini"]
PROMPT = "hi"
MODEL = "scripted"
CLAUDE_CODE_VERSION = "2.1.332"
CODEX_VERSION = "0.171.0"
GEMINI_CLI_VERSION = "0.61.0"


class Skipped(Exception):
    """The peer cannot be measured here; the message says why, in one line."""


@dataclass(frozen=True)
class Servers:
    """Where the scripted servers listen."""

    openai: str
    anthropic: str
    gemini: str


@dataclass(frozen=True)
class Prepared:
    """An installed, configured peer.

    Attributes:
        executable: The command that runs it (``--version`` follows it).
        options: What a headless prompt needs before the prompt's own arguments.
        env: Its environment.

    """

    executable: list[str]
    options: list[str]
    env: dict[str, str]


@dataclass
class Peer:
    """One tool to measure: ``prepare`` installs and configures it.

    Attributes:
        name: The name in the table.
        api: The scripted server it talks to.
        prepare: ``(cache, home, servers) -> Prepared``; writes its config into ``home``; raises
            :class:`Skipped`.
        prompt_args: The arguments of one headless prompt, after :attr:`Prepared.options`.
        prepared: Set by :meth:`ready`.

    """

    name: str
    api: Api
    prepare: Callable[[Path, Path, Servers], Prepared]
    prompt_args: list[str]
    prepared: Prepared = field(default_factory=lambda: Prepared([], [], {}))

    def ready(self, cache: Path, home: Path, servers: Servers) -> None:
        """Install and configure the peer; raises :class:`Skipped`."""
        try:
            self.prepared = self.prepare(cache, home, servers)
        except RuntimeError as error:  # the installers' failures
            raise Skipped(str(error).splitlines()[0]) from error

    @property
    def prompt_command(self) -> list[str]:
        """The command of one headless prompt."""
        return [*self.prepared.executable, *self.prepared.options, *self.prompt_args]

    @property
    def version_command(self) -> list[str]:
        """``<tool> --version``."""
        return [*self.prepared.executable, "--version"]


def _env(venv: Path, home: Path, **extra: str) -> dict[str, str]:
    return peer_environment(venv, home=home, extra=extra)


def _npm_peer(
    cache: Path, name: str, package: str, version: str, binary: str, env: dict[str, str] | None = None
) -> tuple[Path, Path]:
    """Install npm ``package@version`` into ``<cache>/npm/<name>``: the folder and the binary.

    ``env``: what npm and the binary's ``--version`` check run with (this process's when None).
    """
    folder = cache / "npm" / name
    log = cache / "logs" / f"{name}-install.log"
    spec = f"{package}@{version}"
    return folder, ensure_npm_package(folder, spec, binary=binary, version=version, log=log, env=env)


def _venv_peer(
    cache: Path,
    name: str,
    requirement: tuple[str, str],
    import_check: str,
    env: dict[str, str],
    python: str | None = None,
) -> Path:
    """Install ``requirement`` (distribution, version) into ``<cache>/venvs/<name>``: its ``bin``."""
    dist, version = requirement
    return ensure_venv(
        cache / "venvs" / name,
        [f"{dist}=={version}"],
        check=requirement,
        import_check=import_check,
        log=cache / "logs" / f"{name}-install.log",
        probe_env=env,
        python=python,
    )


def _nestor(api: Api) -> Callable[[Path, Path, Servers], Prepared]:
    def prepare(cache: Path, home: Path, servers: Servers) -> Prepared:
        venv = Path(sys.prefix)
        keys = {
            "openai": {"OPENAI_BASE_URL": servers.openai, "OPENAI_API_KEY": "bench"},
            "anthropic": {"ANTHROPIC_BASE_URL": servers.anthropic, "ANTHROPIC_API_KEY": "bench"},
            "gemini": {"GOOGLE_GEMINI_BASE_URL": servers.gemini, "GOOGLE_API_KEY": "bench"},
        }[api]
        # Its warm server (``nestor serve``) is its own too, started by the warm-up run in this home.
        runtime = home / "run"
        runtime.mkdir(mode=0o700)
        env = _env(venv, home, NESTOR_HOME=str(home / "nestor"), XDG_RUNTIME_DIR=str(runtime), **keys)
        return Prepared([sys.executable, "-m", "nestor"], [], env)

    return prepare


def nestor_model(api: Api) -> str:
    """The ``--model`` nestor runs with on ``api``'s scripted server."""
    return {
        "openai": "openai-chat:gpt-4o",
        "anthropic": "anthropic:claude-sonnet-4-5",
        "gemini": "google:gemini-2.5-flash",
    }[api]


def _claude(cache: Path, home: Path, servers: Servers) -> Prepared:
    folder, claude = _npm_peer(
        cache, "claude-code", "@anthropic-ai/claude-code", CLAUDE_CODE_VERSION, "claude"
    )
    env = _env(
        folder,
        home,
        ANTHROPIC_BASE_URL=servers.anthropic,
        ANTHROPIC_API_KEY="bench",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    return Prepared([str(claude)], [], env)


def _codex(cache: Path, home: Path, servers: Servers) -> Prepared:
    folder, codex = _npm_peer(cache, "codex", "@openai/codex", CODEX_VERSION, "codex")
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    # Codex speaks only the Responses API to a custom provider (`wire_api = "chat"` is refused).
    (codex_home / "config.toml").write_text(
        f'model = "{MODEL}"\nmodel_provider = "bench"\ncheck_for_update_on_startup = false\n'
        "[analytics]\nenabled = false\n"
        f'[model_providers.bench]\nname = "bench"\nbase_url = "{servers.openai}"\n'
        'wire_api = "responses"\nenv_key = "BENCH_API_KEY"\n',
        encoding="utf-8",
    )
    return Prepared([str(codex)], [], _env(folder, home, CODEX_HOME=str(codex_home), BENCH_API_KEY="bench"))


def _opencode(cache: Path, home: Path, servers: Servers) -> Prepared:
    folder, opencode = _npm_peer(cache, "opencode", "opencode-ai", OPENCODE_VERSION, "opencode")
    config = home / "opencode.json"
    config.write_text(json.dumps(opencode_config(servers.openai, MODEL, 128_000)), encoding="utf-8")
    env = _env(
        folder,
        home,
        OPENCODE_CONFIG=str(config),
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_SHARE="1",
    )
    return Prepared([str(opencode)], [], env)


def _litellm_env(venv: Path, home: Path, **extra: str) -> dict[str, str]:
    # litellm fetches its model price list from the network at import unless told not to.
    return _env(venv, home, LITELLM_LOCAL_MODEL_COST_MAP="True", **extra)


def _aider(cache: Path, home: Path, servers: Servers) -> Prepared:
    venv = cache / "venvs" / "aider"
    env = _litellm_env(venv, home)
    bin_dir = _venv_peer(cache, "aider", ("aider-chat", AIDER_VERSION), "import aider.main", env)
    model = f"openai/{MODEL}"
    metadata = home / "model-metadata.json"
    metadata.write_text(json.dumps(model_metadata(model, 128_000)), encoding="utf-8")
    prices = home / ".aider" / "caches" / "model_prices_and_context_window.json"
    prices.parent.mkdir(parents=True, exist_ok=True)
    prices.write_text(json.dumps(model_metadata(model, 128_000)), encoding="utf-8")
    command = aider_command(
        bin_dir / "aider",
        model=model,
        api_base=servers.openai,
        prompt=PROMPT,
        metadata=metadata,
        run_dir=home,
        map_tokens=1024,
        timeout_s=60,
    )
    return Prepared(command[:1], command[1:-2], env)  # the prompt (`--message hi`) is prompt_args


def _mini(cache: Path, home: Path, servers: Servers) -> Prepared:
    venv = cache / "venvs" / "mini-swe-agent"
    env = _litellm_env(
        venv,
        home,
        MSWEA_CONFIGURED="true",
        MSWEA_GLOBAL_CONFIG_DIR=str(home / ".config" / "mini-swe-agent"),
        MSWEA_COST_TRACKING="ignore_errors",
    )
    requirement = ("mini-swe-agent", MINI_SWE_AGENT_VERSION)
    bin_dir = _venv_peer(cache, "mini-swe-agent", requirement, "import minisweagent.run.mini", env)
    # Its default config (mini.yaml, tool calling); one step: the scripted "ok" is no command, and
    # mini-swe-agent keeps asking until a command submits.
    settings = {
        "agent.step_limit": 1,
        "agent.cost_limit": 0,
        "model.model_kwargs.api_base": servers.openai,
        "model.model_kwargs.api_key": "bench",
        "model.cost_tracking": "ignore_errors",
    }
    overrides = [item for key, value in settings.items() for item in ("-c", f"{key}={value}")]
    return Prepared(
        [str(bin_dir / "mini")], ["--model", f"openai/{MODEL}", "-c", "mini.yaml", *overrides], env
    )


KIMI_CODE_VERSION = "2.1.0"
"""Kimi Code CLI, the successor of the Python Kimi CLI (kimi-cli 1.52.0, archived, only points to it)."""
KIMI_CODE_NODE_VERSION = "22.21.1"
"""Kimi Code needs Node >= 22.19; it runs on this one, from the npm registry, whatever the machine's."""


def _kimi_code(cache: Path, home: Path, servers: Servers) -> Prepared:
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine())
    if arch is None or not sys.platform.startswith("linux"):
        raise Skipped(f"Kimi Code's Node {KIMI_CODE_NODE_VERSION} is installed for Linux x64 and arm64 only")
    _, node = _npm_peer(cache, "node-for-kimi-code", f"node-linux-{arch}", KIMI_CODE_NODE_VERSION, "node")
    path = f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    folder = cache / "npm" / "kimi-code"
    env = _env(
        folder,
        home,
        PATH=path,
        # Its model from the environment: an OpenAI-compatible provider at the scripted server.
        KIMI_MODEL_PROVIDER_TYPE="openai",
        KIMI_MODEL_BASE_URL=servers.openai,
        KIMI_MODEL_NAME=MODEL,
        KIMI_MODEL_API_KEY="bench",
        KIMI_DISABLE_TELEMETRY="1",
        KIMI_CLI_NO_AUTO_UPDATE="1",
        KIMI_CODE_MODEL_CATALOG_REFRESH_ON_START="0",  # else it looks up a catalog's host at start
    )
    _, kimi = _npm_peer(cache, "kimi-code", "@moonshot-ai/kimi-code", KIMI_CODE_VERSION, "kimi", env)
    return Prepared([str(kimi)], [], env)


GEMINI_SETTINGS = {
    # An API key (a dummy; the base URL makes the default "gateway", which headless runs refuse).
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},  # on by default: usage logs sent to Google
    "telemetry": {"enabled": False},
    "ide": {"enabled": False},
}


def _gemini(cache: Path, home: Path, servers: Servers) -> Prepared:
    folder, gemini = _npm_peer(cache, "gemini-cli", "@google/gemini-cli", GEMINI_CLI_VERSION, "gemini")
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(GEMINI_SETTINGS), encoding="utf-8")
    env = _env(folder, home, GEMINI_API_KEY="bench", GOOGLE_GEMINI_BASE_URL=servers.gemini)
    # --skip-trust: a headless run in a folder never trusted stops at once otherwise.
    return Prepared([str(gemini)], ["--skip-trust"], env)


def all_peers() -> list[Peer]:
    """nestor on each API, then every peer, in table order."""
    apis: tuple[Api, ...] = ("openai", "anthropic", "gemini")
    nestor = [Peer(f"nestor ({a})", a, _nestor(a), ["run", "--model", nestor_model(a), PROMPT]) for a in apis]
    return [
        *nestor,
        Peer("Claude Code", "anthropic", _claude, ["-p", PROMPT]),
        Peer("Codex CLI", "openai", _codex, ["exec", "--skip-git-repo-check", PROMPT]),
        Peer("OpenCode", "openai", _opencode, ["run", "-m", f"llama/{MODEL}", PROMPT]),
        Peer("Gemini CLI", "gemini", _gemini, ["-p", PROMPT]),
        Peer("Kimi Code", "openai", _kimi_code, ["-p", PROMPT]),
        Peer("aider", "openai", _aider, ["--message", PROMPT]),
        Peer("mini-swe-agent", "openai", _mini, ["--yolo", "--exit-immediately", "--task", PROMPT]),
    ]

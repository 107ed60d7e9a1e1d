"""The models agent files name, checked against the settings (``nestor agents validate`` and ``create``).

An agent file's ``model`` is read as written; whether it can run depends on the user's settings
and environment, which the registry does not know. A model that names an unknown provider, or no
form nestor accepts, would fail only when a task first uses the agent, so ``validate`` reports it as
an error and ``create`` refuses to write it; a provider without its key is a warning (the key may
be set before the agent runs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from nestor.agents.fields import AgentFileProblem, Severity
from nestor.agents.frontmatter import parse_front_matter
from nestor.agents.readers import MAX_AGENT_FILE_BYTES
from nestor.agents.spec import AgentSpec
from nestor.config.settings import Settings
from nestor.core.errors import AgentFileError, ToolError
from nestor.core.files import read_bounded_text
from nestor.providers.catalogue import credential_status, known_providers
from nestor.runtime.tree.model_choice import resolve_model_choice

_MODEL_KEY = re.compile(r"^model\s*:", re.MULTILINE)


def model_problem(model: str, settings: Settings, env: Mapping[str, str]) -> tuple[Severity, str] | None:
    """What is wrong with an agent's ``model`` under ``settings`` and ``env``, or None.

    Returns:
        ``error`` for a value of no accepted form or an unknown provider, ``warning`` for a provider
        whose key is not set, each with the message.

    """
    try:
        resolved = resolve_model_choice(model, settings.agents)
    except ToolError as exc:
        return "error", exc.message
    if resolved is None or ":" not in resolved:
        return None  # inherit, or a role: the roles' own models are checked where they are configured
    provider = resolved.partition(":")[0]
    if provider not in known_providers(settings):
        known = ", ".join(known_providers(settings))
        return "error", (
            f"unknown provider {provider!r} in {resolved!r} (known: {known}): the agent would fail when a "
            f"task uses it; add a [providers.{provider}] table, or name a known provider"
        )
    status = credential_status(provider, settings, env)
    if status.has_credentials:
        return None
    return "warning", (
        f"{resolved!r}: {provider} has no credentials here ({' or '.join(status.env_vars)} is not set), so "
        "a task using this agent fails until it is"
    )


def agent_model_problems(
    specs: Iterable[AgentSpec], settings: Settings, env: Mapping[str, str]
) -> list[AgentFileProblem]:
    """The model problems of the agents read from files, each on its file's ``model`` line."""
    problems: list[AgentFileProblem] = []
    for spec in specs:
        if spec.source == "builtin" or spec.path is None or spec.model is None:
            continue
        found = model_problem(spec.model, settings, env)
        if found is not None:
            problems.append(AgentFileProblem(spec.path, _model_line(spec.path), "model", found[1], found[0]))
    return problems


def new_agent_model_problem(
    spec: AgentSpec, text: str, settings: Settings, env: Mapping[str, str]
) -> AgentFileProblem | None:
    """The model problem of a new agent's ``text`` (its file not written yet), or None."""
    if spec.model is None or spec.path is None:
        return None
    found = model_problem(spec.model, settings, env)
    if found is None:
        return None
    try:
        line = parse_front_matter(text, spec.path).line("model")
    except AgentFileError:
        line = 1
    return AgentFileProblem(spec.path, line, "model", found[1], found[0])


def _model_line(path: Path) -> int:
    """The line of the ``model`` key in ``path`` (1 when it cannot be found)."""
    try:
        text = read_bounded_text(path, limit_bytes=MAX_AGENT_FILE_BYTES).text
    except OSError:
        return 1
    match = _MODEL_KEY.search(text)
    return 1 if match is None else text.count("\n", 0, match.start()) + 1

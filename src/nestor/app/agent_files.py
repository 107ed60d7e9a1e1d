"""Agent files as UIs handle them (``nestor agents``): the registry, new agents' text, drafts by a model.

Light on purpose: listing agent files needs neither the database nor a model, so nothing here
imports the model layer until a draft is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nestor.agents.fields import NAME_PATTERN, AgentFileProblem, ReadContext
from nestor.agents.frontmatter import parse_front_matter
from nestor.agents.readers import ReadResult, read_agent_text
from nestor.agents.registry import AgentRegistry, project_registry
from nestor.agents.spec import AgentSpec
from nestor.agents.writer import render_spec_markdown
from nestor.core.errors import AgentFileError, ConfigError, NestorError

if TYPE_CHECKING:
    from nestor.config import Settings

__all__ = [
    "AgentFileProblem",
    "AgentRegistry",
    "AgentSpec",
    "ReadResult",
    "check_name",
    "compose",
    "draft_agent",
    "drafted_name",
    "fix_agent_files",
    "project_registry",
    "read_new_agent",
    "render_spec_markdown",
    "set_fields",
    "with_overrides",
]


def check_name(name: str) -> None:
    """Refuse a name an agent file cannot have.

    Raises:
        NestorError: The name is not letters, digits, ``_``, ``.`` and ``-``, starting with a letter or digit.

    """
    if not NAME_PATTERN.match(name):
        raise NestorError(
            f"invalid agent name {name!r}",
            hint="use letters, digits, '_', '.' and '-', starting with a letter or digit",
        )


def set_fields(data: Mapping[str, Any], values: Mapping[str, str | None]) -> dict[str, Any]:
    """``data`` with ``values`` set; an empty ``tools`` or ``model`` removes the key (all tools, inherit)."""
    result = dict(data)
    for key, value in values.items():
        if value is None:
            continue
        if value.strip() or key not in ("tools", "model"):
            result[key] = value.strip()
        else:
            result.pop(key, None)
    return result


def compose(data: Mapping[str, Any], body: str) -> str:
    """An agent file from front-matter values and a prompt, for the readers to check."""
    import yaml

    class InlineLists(yaml.SafeDumper):
        """Lists on one line (``tools: [view, grep]``), as the writer writes them."""

    def inline(dumper: yaml.SafeDumper, items: list[Any]) -> yaml.Node:
        return dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=True)

    InlineLists.add_representer(list, inline)
    front = yaml.dump(dict(data), Dumper=InlineLists, sort_keys=False, allow_unicode=True, width=1_000_000)
    return f"---\n{front}---\n\n{body.strip()}\n"


def with_overrides(draft: str, given: Mapping[str, str | None], prompt: str | None) -> str:
    """The drafted file with the values given as options in place of the drafted ones."""
    if all(value is None for value in given.values()) and prompt is None:
        return draft
    try:
        document = parse_front_matter(draft, Path("draft.md"))
    except AgentFileError:
        return draft  # reading it reports where the draft is broken
    if document.ignored is not None:
        return draft
    return compose(set_fields(document.data, given), prompt if prompt is not None else document.body)


def drafted_name(text: str) -> str | None:
    """The name a new agent's text gives itself; ``new-agent`` when unusable, None when it has none."""
    try:
        document = parse_front_matter(text, Path("draft.md"))
    except AgentFileError:
        return "new-agent"  # the reader reports the broken front matter
    if document.ignored is not None:
        return "new-agent"
    written: Any = document.data.get("name")
    if not written:
        return None
    return str(written) if NAME_PATTERN.match(str(written)) else "new-agent"


def fix_agent_files(registry: AgentRegistry) -> list[tuple[Path, str]]:
    """Rewrite each agent file whose front matter loaded only after a repair, its values as block scalars.

    Returns:
        Each such file and what became of it (rewritten, or why it was left as it is).

    """
    from nestor.agents.frontmatter_fix import fixed_text
    from nestor.agents.readers import MAX_AGENT_FILE_BYTES
    from nestor.core.files import read_bounded_text

    outcomes: list[tuple[Path, str]] = []
    for context in registry.repaired():
        try:
            read = read_bounded_text(
                context.path, limit_bytes=MAX_AGENT_FILE_BYTES, inside=context.inside, errors="strict"
            )
            fixed = None if read.cut else fixed_text(read.text, context.path, context.ecosystem)
            if fixed is None:
                outcomes.append((context.path, "left as it is: its repaired values do not read the same"))
                continue
            Path(os.path.realpath(context.path)).write_text(fixed, encoding="utf-8", newline="")
        except (OSError, UnicodeDecodeError, AgentFileError) as exc:
            outcomes.append((context.path, f"left as it is: {exc}"))
            continue
        outcomes.append((context.path, "rewritten: each repaired value is now a block scalar"))
    return outcomes


def read_new_agent(registry: AgentRegistry, text: str, name: str) -> ReadResult:
    """Read a new agent's text as its file, ``.nestor/agents/NAME.md``, would be read."""
    own = next(loc for loc in registry.locations() if loc.source == "project" and loc.ecosystem == "nestor")
    context = ReadContext(own.directory / f"{name}.md", "project", "nestor", name, own.config_dirs)
    return read_agent_text(context, text)


def draft_agent(
    settings: Settings, description: str, name: str | None, *, notify: Callable[[str], None]
) -> str:
    """A new agent's file drafted by the large model from ``description``.

    Raises:
        ConfigError: No model is configured to draft it.

    """
    import asyncio

    from nestor.agents.tool_names import NESTOR_TOOLS
    from nestor.app.root import App
    from nestor.runtime.features.agent_drafts import draft_agent_spec

    application = App.open(settings, notify=notify)
    try:
        try:
            model_config = application.models.config("large", os.environ)
        except ConfigError:
            raise ConfigError(
                "no model configured to draft the agent",
                hint="pass --draft-model provider:model (--model sets the new agent's own model), set "
                'NESTOR_MODEL, or add `[models] large = "provider:model"` to nestor.toml',
            ) from None
        built = application.models.build(model_config, os.environ)
        notify(f"drafting the agent with {built.name}...")
        return asyncio.run(draft_agent_spec(built, description, tool_names=NESTOR_TOOLS, name=name))
    finally:
        application.close()

"""The delegable agents as a model is told of them: bounded, however many a project defines.

The ``task`` tool's description lists every delegable agent with its description, and goes with
every request; a repository with hundreds of agent files, or one description of 200 KB, would put
all of it into each. So a listing takes whole entries up to a size, the user's own first (built-in
and user agents, then the project's, each by name), cuts each description to
:data:`MAX_DESCRIPTION_CHARS`, shows what it took in name order, and says how many it left out.
Those can still be delegated to by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nestor.agents.spec import AgentSpec

MAX_LISTING_CHARS = 15_000
"""The most characters of agent lines in the ``task`` tool's description (about 4k tokens)."""
MAX_DESCRIPTION_CHARS = 1_000
"""The most characters of one agent's description in that listing."""
MAX_NAMES_CHARS = 2_000
"""The most characters of agent names where only names are listed (a small model's brief
description, the error for an unknown agent)."""


def agent_lines(specs: Sequence[AgentSpec], *, max_chars: int = MAX_LISTING_CHARS) -> list[str]:
    """``- name: description`` for the agents that fit in ``max_chars``, then a line for the others."""
    lines, left_out = _fitting(specs, _line, max_chars)
    if left_out:
        lines.append(
            f"- ({left_out} more agent{'s' if left_out > 1 else ''} not listed, to keep this short: "
            "name one only when the user does)"
        )
    return lines


def agent_names(specs: Sequence[AgentSpec], *, max_chars: int = MAX_NAMES_CHARS) -> str:
    """The agents' names, comma-separated, as many as fit in ``max_chars``, then how many more."""
    names, left_out = _fitting(specs, lambda spec: spec.name, max_chars)
    text = ", ".join(names) or "(none)"
    return f"{text} and {left_out} more" if left_out else text


def _line(spec: AgentSpec) -> str:
    description = " ".join(spec.description.split())
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return f"- {spec.name}: {description}"


def _fitting(
    specs: Sequence[AgentSpec], render: Callable[[AgentSpec], str], max_chars: int
) -> tuple[list[str], int]:
    """The entries that fit in ``max_chars`` (the user's own first), in name order; how many did not."""
    taken: list[tuple[str, str]] = []
    used = 0
    for spec in sorted(specs, key=lambda spec: (spec.source == "project", spec.name)):
        text = render(spec)
        if used + len(text) + 2 <= max_chars:
            taken.append((spec.name, text))
            used += len(text) + 2
    return [text for _name, text in sorted(taken)], len(specs) - len(taken)

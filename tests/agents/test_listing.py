from __future__ import annotations

from nestor.agents.listing import MAX_DESCRIPTION_CHARS, MAX_LISTING_CHARS, agent_lines, agent_names
from nestor.agents.spec import AgentSource, AgentSpec


def _spec(name: str, description: str = "Does things.", source: AgentSource = "project") -> AgentSpec:
    return AgentSpec(name=name, description=description, prompt="p", source=source)


BUILTIN = [_spec(name, f"The {name} agent.", "builtin") for name in ("explore", "general", "plan")]


def test_every_agent_is_listed_in_name_order_when_they_fit() -> None:
    specs = [*BUILTIN, _spec("aardvark", "Digs\n  deep.")]
    assert agent_lines(specs) == [
        "- aardvark: Digs deep.",
        "- explore: The explore agent.",
        "- general: The general agent.",
        "- plan: The plan agent.",
    ]
    assert agent_names(specs) == "aardvark, explore, general, plan"
    assert agent_names([]) == "(none)"


def test_hundreds_of_project_agents_never_push_out_the_users_own_and_the_rest_is_counted() -> None:
    project = [
        _spec(f"a{index:03}", "Reviews the changes of one area for bugs. " * 3) for index in range(500)
    ]
    lines = agent_lines([*project, *BUILTIN, _spec("mine", "My own.", "user")])
    text = "\n".join(lines)
    assert len(text) <= MAX_LISTING_CHARS + 200
    for name in ("explore", "general", "plan", "mine"):
        assert f"- {name}: " in text
    listed = [line for line in lines if not line.startswith("- (")]
    left_out = 504 - len(listed)
    assert lines[-1].startswith(f"- ({left_out} more agents not listed, to keep this short")
    assert listed == sorted(listed)
    names = agent_names([*project, *BUILTIN])
    assert names.startswith("a000, a001,") and ", explore, general, plan and " in names
    assert names.endswith(" more") and len(names) < 2_100


def test_a_huge_description_or_name_cannot_fill_the_listing() -> None:
    huge = _spec("huge", "word " * 50_000)
    [line] = agent_lines([huge])
    assert len(line) == len("- huge: ") + MAX_DESCRIPTION_CHARS and line.endswith("…")
    long_name = _spec("n" * 20_000)
    lines = agent_lines([long_name, *BUILTIN])
    assert lines[:3] == [
        "- explore: The explore agent.",
        "- general: The general agent.",
        "- plan: The plan agent.",
    ]
    assert lines[3].startswith("- (1 more agent not listed")

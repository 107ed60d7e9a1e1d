from __future__ import annotations

from pathlib import Path

import yaml

from nestor.agents.readers import ReadContext, read_agent_file
from nestor.agents.spec import AgentSpec, PermissionRuleSpec
from nestor.agents.writer import render_spec_markdown


def _read_back(tmp_path: Path, text: str, name: str, config_dirs: tuple[Path, ...] = ()) -> AgentSpec:
    path = tmp_path / ".nestor" / "agents" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    result = read_agent_file(ReadContext(path, "project", "nestor", name, config_dirs))
    assert result.problems == (), [str(problem) for problem in result.problems]
    assert result.spec is not None
    return result.spec


def test_minimal_spec_writes_only_name_and_description(tmp_path: Path) -> None:
    spec = AgentSpec(name="helper", description="Helps: with things", prompt="You help.", source="project")
    text = render_spec_markdown(spec)
    assert text == "---\nname: helper\ndescription: 'Helps: with things'\n---\n\nYou help.\n"
    assert _read_back(tmp_path, text, "helper") == spec


def test_full_spec_round_trips(tmp_path: Path) -> None:
    base = tmp_path / ".nestor"
    (base / "rules").mkdir(parents=True)
    rule = base / "rules" / "style.md"
    rule.write_text("style")
    (base / "skills" / "deploy").mkdir(parents=True)
    skill_dir = base / "skills" / "deploy" / "SKILL.md"
    skill_dir.write_text("deploy")
    flat_skill = base / "skills" / "lint.md"
    flat_skill.write_text("lint")
    elsewhere = tmp_path / "docs" / "extra-rule.md"
    elsewhere.parent.mkdir()
    elsewhere.write_text("extra")
    spec = AgentSpec(
        name="reviewer.v2",
        description="Reviews code.\nTwo lines, with 'quotes' and: colons.",
        prompt="# Reviewer\n\nReview carefully.\n\n---\n\nEnd.",
        tools=("view", "grep", "bash"),
        disallowed_tools=("bash",),
        model="anthropic:claude-sonnet-4-20250514",
        temperature=0.25,
        max_turns=9,
        max_time_s=120.5,
        max_context_tokens=40_000,
        thoroughness="medium",
        rule_files=(rule, elsewhere),
        skill_files=(skill_dir, flat_skill),
        color="#ff8800",
        mode="all",
        persist=True,
        background=True,
        inherit_context=True,
        permission=(
            PermissionRuleSpec("allow", "bash(git status*)"),
            PermissionRuleSpec("ask", "web_fetch"),
            PermissionRuleSpec("deny", "bash(rm *)"),
            PermissionRuleSpec("deny", "write"),
        ),
        source="project",
    )
    text = render_spec_markdown(spec)
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["rules"] == ["style", str(elsewhere)]
    assert front["skills"] == ["deploy", "lint"]
    assert front["permission"] == {
        "allow": ["bash(git status*)"],
        "ask": ["web_fetch"],
        "deny": ["bash(rm *)", "write"],
    }
    assert _read_back(tmp_path, text, "reviewer.v2", (base,)) == spec


def test_empty_tool_list_and_empty_prompt_round_trip(tmp_path: Path) -> None:
    spec = AgentSpec(name="quiet", description="No tools.", prompt="", tools=(), source="project")
    text = render_spec_markdown(spec)
    assert "tools: []" in text
    assert text.endswith("---\n")
    assert _read_back(tmp_path, text, "quiet") == spec


def test_builtin_specs_round_trip(tmp_path: Path) -> None:
    from nestor.agents.registry import AgentRegistry

    registry = AgentRegistry(tmp_path / "p", home=tmp_path / "h", user_config_dir=tmp_path / "c")
    for spec in registry.specs():
        again = _read_back(tmp_path, render_spec_markdown(spec), spec.name)
        assert again == AgentSpec(**{**_fields(spec), "source": "project"})


def _fields(spec: AgentSpec) -> dict[str, object]:
    return {name: getattr(spec, name) for name in AgentSpec.__dataclass_fields__}

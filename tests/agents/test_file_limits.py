"""A project's agent files are read within limits; what is read stays current and correct."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nestor.agents.file_limits import PROJECT_LIMITS, AgentFileLimits
from nestor.agents.registry import AgentRegistry
from nestor.core.errors import UnknownAgentError
from tests.agents.test_locations import nest, unnest


def _registry(
    tmp_path: Path, limits: AgentFileLimits = PROJECT_LIMITS, *, trusted: bool = True
) -> AgentRegistry:
    home = tmp_path / "home"
    return AgentRegistry(
        tmp_path / "project",
        home=home,
        user_config_dir=home / ".config" / "nestor",
        builtin=False,
        trusted=trusted,
        limits=limits,
    )


def _agent(path: Path, description: str = "d", *, extra: str = "", mtime: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    name = f"name: {path.stem}\n" if ".claude" in path.parts else ""
    path.write_text(f"---\n{name}description: {description}\n{extra}---\nPrompt.\n", encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def _names(registry: AgentRegistry) -> list[str]:
    return [spec.name for spec in registry.specs()]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tmp_path / "project"


def test_past_the_file_limit_the_rest_is_ignored_in_precedence_order_with_one_warning(
    tmp_path: Path, project: Path
) -> None:
    for name in ("b", "a"):
        _agent(project / ".nestor/agents" / f"{name}.md")
    for name in ("c", "d", "e"):
        _agent(project / ".claude/agents" / f"{name}.md")
    registry = _registry(tmp_path, AgentFileLimits(files=3))
    assert _names(registry) == ["a", "b", "c"]
    limit = registry.read_limit()
    assert limit is not None
    assert (limit.path, limit.line, limit.severity) == (project / ".claude/agents/d.md", 1, "warning")
    assert limit.message.startswith("nestor reads at most 3 agent files of a project (4 MB, 25,000 ")
    assert "\n" not in str(limit)
    assert registry.problems() == [limit]
    with pytest.raises(UnknownAgentError) as caught:
        registry.get("e")
    assert caught.value.message.endswith(f"nestor stopped at {project / '.claude/agents/d.md'}")


def test_removed_files_let_the_next_ones_in_and_the_warning_goes_when_all_fit(
    tmp_path: Path, project: Path
) -> None:
    paths = [_agent(project / ".claude/agents" / f"{name}.md") for name in "abcde"]
    registry = _registry(tmp_path, AgentFileLimits(files=3))
    assert _names(registry) == ["a", "b", "c"]
    paths[0].unlink()
    assert _names(registry) == ["b", "c", "d"]
    limit = registry.read_limit()
    assert limit is not None and limit.path == paths[4]
    paths[1].unlink()
    assert _names(registry) == ["c", "d", "e"]
    assert registry.read_limit() is None
    assert registry.problems() == []


def test_a_changed_file_is_re_read_and_the_others_are_not(tmp_path: Path, project: Path) -> None:
    first = _agent(project / ".nestor/agents/a.md", "first", mtime=1_000_000)
    _agent(project / ".nestor/agents/b.md", "b", mtime=1_000_000)
    _agent(project / ".nestor/agents/c.md", "c", mtime=1_000_000)
    registry = _registry(tmp_path, AgentFileLimits(files=2))
    before = registry.get("b")
    _agent(first, "second", mtime=1_000_100)
    assert registry.get("a").description == "second"
    assert registry.get("b") is before
    assert _names(registry) == ["a", "b"]


def test_an_invalid_file_is_reported_and_counts_against_the_limit(tmp_path: Path, project: Path) -> None:
    agents = project / ".nestor/agents"
    _agent(agents / "a.md", extra="max_turns: many\n")
    _agent(agents / "b.md")
    _agent(agents / "c.md")
    registry = _registry(tmp_path, AgentFileLimits(files=2))
    assert _names(registry) == ["b"]
    problems = registry.problems()
    assert [(problem.path.name, problem.key, problem.severity) for problem in problems] == [
        ("a.md", "max_turns", "error"),
        ("c.md", "", "warning"),
    ]


def test_reading_stops_at_the_file_that_would_pass_the_byte_limit(tmp_path: Path, project: Path) -> None:
    agents = project / ".nestor/agents"
    small = _agent(agents / "a.md")
    _agent(agents / "b.md", "x" * 1_000)
    _agent(agents / "c.md")
    registry = _registry(tmp_path, AgentFileLimits(bytes=small.stat().st_size + 500))
    assert _names(registry) == ["a"]
    limit = registry.read_limit()
    assert limit is not None and limit.path == agents / "b.md"
    assert "0.0" in limit.message  # the bytes limit, in MB


def test_reading_stops_once_the_front_matter_values_reach_the_limit(tmp_path: Path, project: Path) -> None:
    agents = project / ".nestor/agents"
    _agent(agents / "a.md", extra=f"tools: [{', '.join(['view'] * 40)}]\n")
    _agent(agents / "b.md")
    registry = _registry(tmp_path, AgentFileLimits(values=30))
    assert _names(registry) == ["a"]
    limit = registry.read_limit()
    assert limit is not None and limit.path == agents / "b.md"


def test_the_files_a_file_makes_nestor_look_for_count_as_values(tmp_path: Path, project: Path) -> None:
    agents = project / ".nestor/agents"
    # 15 values (the mapping, 2 keys, a description, a list of 10), and 2 places to look for each rule
    _agent(agents / "a.md", extra=f"rules: [{', '.join(f'r{index}' for index in range(10))}]\n")
    _agent(agents / "b.md")
    assert _registry(tmp_path, AgentFileLimits(values=36)).read_limit() is None
    limit = _registry(tmp_path, AgentFileLimits(values=35)).read_limit()
    assert limit is not None and limit.path == agents / "b.md"


def test_the_users_own_agent_files_are_not_limited(tmp_path: Path, project: Path) -> None:
    for name in "abcd":
        _agent(tmp_path / "home/.config/nestor/agents" / f"{name}.md")
    _agent(project / ".nestor/agents/p.md")
    _agent(project / ".nestor/agents/q.md")
    registry = _registry(tmp_path, AgentFileLimits(files=1))
    assert _names(registry) == ["a", "b", "c", "d", "p"]
    limit = registry.read_limit()
    assert limit is not None and limit.path == project / ".nestor/agents/q.md"


def test_an_untrusted_projects_files_read_within_the_limits_keep_the_trust_rules(
    tmp_path: Path, project: Path
) -> None:
    _agent(project / ".nestor/agents/a.md", extra="model: evil:gpt\n")
    _agent(project / ".nestor/agents/b.md", extra="model: evil:gpt\n")
    registry = _registry(tmp_path, AgentFileLimits(files=1), trusted=False)
    assert registry.get("a").model is None
    assert [spec.name for spec in registry.untrusted_models()] == ["a"]


def test_a_project_with_2000_agent_files_reads_the_first_500(tmp_path: Path, project: Path) -> None:
    agents = project / ".claude/agents"
    agents.mkdir(parents=True)
    for index in range(2_000):
        (agents / f"agent-{index:04}.md").write_text(
            f"---\nname: agent-{index:04}\ndescription: Reviews changes.\ntools: Read, Grep\n---\nReview.\n",
            encoding="utf-8",
        )
    registry = _registry(tmp_path)
    names = _names(registry)
    assert len(names) == PROJECT_LIMITS.files == 500
    assert names[0] == "agent-0000" and names[-1] == "agent-0499"
    limit = registry.read_limit()
    assert limit is not None and limit.path == agents / "agent-0500.md"


def test_a_deep_opencode_tree_or_json_file_never_stops_the_registry(tmp_path: Path, project: Path) -> None:
    nest(project / ".opencode/agents", 1200, "deep.md", "---\ndescription: Deep.\n---\nPrompt.\n")
    minicc = project / ".mini-cc/agents"
    minicc.mkdir(parents=True)
    (minicc / "nested.json").write_text('{"name": "x", "tools": ' + "[" * 100_000 + "]" * 100_000 + "}")
    try:
        registry = _registry(tmp_path)
        assert _names(registry) == ["deep"]
        [error] = registry.problems()
        assert error.path == minicc / "nested.json" and "levels deep" in error.message
    finally:
        unnest(project / ".opencode/agents")

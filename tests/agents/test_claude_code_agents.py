"""Two public collections of Claude Code agents load in full, as Claude Code loads them.

The files are in ``claude_code_agents/`` (see its README): VoltAgent's collection goes into a
project's ``.claude/agents``, wshobson's into the user's ``~/.claude/agents``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from nestor.agents.registry import AgentRegistry

CORPUS = Path(__file__).parent / "claude_code_agents"
VOLTAGENT = sorted((CORPUS / "voltagent" / "categories").glob("*/*.md"))
WSHOBSON = sorted((CORPUS / "wshobson" / "plugins").glob("*/agents/*.md"))
REPAIRED = {
    "ab-test-analysis.md",
    "assumption-mapping.md",
    "backlog-grooming.md",
    "cohort-analysis.md",
    "first-principles-thinking.md",
    "gdpr-ccpa-compliance.md",
    "growth-loops.md",
    "hipaa-compliance.md",
}
"""VoltAgent's files with an unquoted ': ' in their description, which strict YAML rejects."""


def _install(files: list[Path], folder: Path, *, prefix_plugin: bool) -> None:
    folder.mkdir(parents=True)
    for path in files:
        # wshobson's plugins share file names; Claude Code names each agent by its front matter.
        name = f"{path.parent.parent.name}--{path.name}" if prefix_plugin else path.name
        shutil.copyfile(path, folder / name)


def test_both_collections_load_in_full_with_a_warning_for_each_repaired_file(tmp_path: Path) -> None:
    assert (len(VOLTAGENT), len(WSHOBSON)) == (157, 202)
    project, home = tmp_path / "project", tmp_path / "home"
    _install(VOLTAGENT, project / ".claude" / "agents", prefix_plugin=False)
    _install(WSHOBSON, home / ".claude" / "agents", prefix_plugin=True)
    registry = AgentRegistry(project, home=home, user_config_dir=home / ".config" / "nestor", builtin=False)

    specs, shadowed, problems = registry.specs(), registry.shadowed(), registry.problems()

    assert [problem for problem in problems if problem.severity == "error"] == []
    assert len(specs) + len(shadowed) == 157 + 202
    assert len(specs) == 157 + 202 - 24  # 24 names are in both collections
    assert all(spec.description and spec.prompt for spec in specs + shadowed)
    repairs = [problem for problem in problems if "invalid YAML" in problem.message]
    assert {problem.path.name for problem in repairs} == REPAIRED
    assert all((problem.key, problem.line) == ("description", 3) for problem in repairs)
    growth = registry.get("growth-loops")
    assert growth.description.startswith("Use when the user wants to design a growth loop")
    assert "Triggers on: 'growth loop'" in growth.description
    assert growth.tools == ("view", "write", "edit", "glob", "grep", "web_fetch", "web_search")

"""``nestor agents list|show|validate|create|delete`` run by a user, over files of several formats."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from nestor.agents.registry import AgentRegistry
from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.cli.support import clean_env, nestor, nestor_json, openai_env

REVIEWER = (
    "---\nname: reviewer\ndescription: Reviews diffs.\nmodel: small\ntools: [view, grep]\n---\nReview.\n"
)
USER_REVIEWER = "---\nname: reviewer\ndescription: The user's reviewer.\n---\nOld.\n"
TESTER = (
    "---\nname: tester\ndescription: Runs the tests.\ntools: Read, Bash\npermissionMode: plan\n---\nTest.\n"
)
DOCS = "---\ndescription: Writes docs.\nmode: all\ntools:\n  bash: false\n---\nDocument.\n"
TYPO = "---\nname: typo\ndescription: Has a typo.\ntool: [view]\n---\nOops.\n"
BROKEN_JSON = '{\n  "name": "broken",\n  "tools": [bash]\n}\n'


@dataclass
class Project:
    root: Path
    home: Path
    env: dict[str, str]

    def write(self, relative: str, text: str, *, user: bool = False) -> Path:
        path = (self.home if user else self.root) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def registry(self) -> AgentRegistry:
        return AgentRegistry(self.root, home=self.home, user_config_dir=self.home / ".config" / "nestor")


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "project"
    root.mkdir()
    env = clean_env(tmp_path / "home")
    return Project(root, tmp_path / "home", env)


@pytest.fixture
def mixed(project: Project) -> Project:
    """Good files of four formats, a user file shadowed by the project's, and two broken files."""
    project.write(".nestor/agents/reviewer.md", REVIEWER)
    project.write(".claude/agents/reviewer.md", USER_REVIEWER, user=True)
    project.write(".claude/agents/tester.md", TESTER)
    project.write(".opencode/agent/docs.md", DOCS)
    project.write(".nestor/agents/typo.md", TYPO)
    project.write(".mini-cc/agents/broken.json", BROKEN_JSON)
    return project


def test_list_json_has_agents_shadowed_and_problems(mixed: Project) -> None:
    listing = nestor_json(["agents", "list", "--json"], cwd=mixed.root, env=mixed.env)
    assert set(listing) == {"agents", "shadowed", "problems"}
    agents = {agent["name"]: agent for agent in listing["agents"]}
    assert sorted(agents) == ["coder", "docs", "explore", "general", "plan", "reviewer", "tester"]
    reviewer = agents["reviewer"]
    assert (reviewer["source"], reviewer["ecosystem"], reviewer["model"]) == ("project", "nestor", "small")
    assert reviewer["tools"] == ["view", "grep"] and reviewer["description"] == "Reviews diffs."
    assert reviewer["path"] == str(mixed.root / ".nestor/agents/reviewer.md")
    assert (agents["tester"]["ecosystem"], agents["tester"]["tools"]) == ("claude", ["view", "bash"])
    assert (agents["docs"]["mode"], agents["docs"]["tools"]) == ("all", None)
    assert agents["docs"]["disallowed_tools"] == ["bash"]
    assert (agents["explore"]["source"], agents["general"]["tools"]) == ("builtin", None)
    [shadowed] = listing["shadowed"]
    assert (shadowed["name"], shadowed["source"], shadowed["ecosystem"]) == ("reviewer", "user", "claude")
    assert shadowed["shadowed_by"] == reviewer["path"]
    problems = {(Path(p["path"]).name, p["line"], p["key"], p["severity"]) for p in listing["problems"]}
    assert {
        ("typo.md", 4, "tool", "error"),
        ("broken.json", 3, "", "error"),
        ("tester.md", 5, "permissionMode", "warning"),
        ("reviewer.md", 2, "name", "warning"),
    } <= problems


def test_list_prints_rows_then_problems_and_exits_0_despite_errors(mixed: Project) -> None:
    done = nestor(["agents", "list"], cwd=mixed.root, env=mixed.env)
    assert done.returncode == 0, done.stderr
    table, _, problems = done.stdout.partition("\nproblems:\n")
    rows = [line.split("\t") for line in table.splitlines()]
    assert rows[0] == ["name", "source", "format", "mode", "model", "tools", "description"]
    assert ["reviewer", "project", "nestor", "subagent", "small", "view, grep", "Reviews diffs."] in rows
    assert ["docs", "project", "opencode", "all", "inherit", "all but not bash", "Writes docs."] in rows
    assert rows[-1][:3] == ["reviewer (shadowed)", "user", "claude"]
    assert ".nestor/agents/typo.md:4: tool: unknown key; known keys: " in problems
    assert ".mini-cc/agents/broken.json:3: invalid JSON" in problems
    assert (
        ".claude/agents/tester.md:5: permissionMode: not supported by nestor, ignored (warning)" in problems
    )


def test_validate_reports_each_problem_and_fails_on_errors_only(mixed: Project) -> None:
    failed = nestor(["agents", "validate"], cwd=mixed.root, env=mixed.env)
    assert failed.returncode == 1
    lines = failed.stdout.splitlines()
    assert any(line.startswith(".nestor/agents/typo.md:4: tool: unknown key") for line in lines)
    assert any(
        line.startswith(".mini-cc/agents/broken.json:3: ") and line.endswith("(error)") for line in lines
    )
    assert lines[-1] == "2 errors, 2 warnings in the agent files"
    report = nestor(["agents", "validate", "--json"], cwd=mixed.root, env=mixed.env)
    assert report.returncode == 1
    assert '"ok": false' in report.stdout and '"errors": 2' in report.stdout

    (mixed.root / ".nestor/agents/typo.md").unlink()
    (mixed.root / ".mini-cc/agents/broken.json").unlink()
    passed = nestor(["agents", "validate"], cwd=mixed.root, env=mixed.env)
    assert passed.returncode == 0, passed.stdout
    assert passed.stdout.splitlines()[-1] == "4 agent files OK (2 warnings)"
    summary = nestor_json(["agents", "validate", "--json"], cwd=mixed.root, env=mixed.env)
    assert (summary["ok"], summary["files_ok"], summary["errors"], summary["warnings"]) == (True, 4, 0, 2)


def test_validate_with_no_agent_files(project: Project) -> None:
    done = nestor(["agents", "validate"], cwd=project.root, env=project.env)
    assert (done.returncode, done.stdout) == (0, "0 agent files OK (0 warnings)\n")


def test_show_prints_every_field_what_it_shadows_and_the_prompt(mixed: Project) -> None:
    done = nestor(["agents", "show", "reviewer"], cwd=mixed.root, env=mixed.env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for expected in (
        "name: reviewer",
        "description: Reviews diffs.",
        "source: project",
        "ecosystem: nestor",
        f"path: {mixed.root / '.nestor/agents/reviewer.md'}",
        "model: small",
        "tools: view, grep",
        "max_turns: -",
        "persist: false",
        "shadows: " + str(mixed.home / ".claude/agents/reviewer.md") + " (user, claude format)",
    ):
        assert expected in lines
    assert lines[-2:] == ["prompt:", "Review."]
    general = nestor_json(["agents", "show", "general", "--json"], cwd=mixed.root, env=mixed.env)
    assert (general["name"], general["source"], general["tools"], general["model"]) == (
        "general",
        "builtin",
        None,
        None,
    )
    assert general["prompt"] and general["shadows"] == [] and general["permission"] == []


def test_show_of_an_unknown_agent_is_one_error_and_a_hint(mixed: Project) -> None:
    done = nestor(["agents", "show", "nobody"], cwd=mixed.root, env=mixed.env)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0].startswith("error: unknown agent type 'nobody'; available agents: ")
    assert lines[1].startswith("hint: ") and len(lines) == 2


def test_create_asks_for_each_field_and_writes_a_file_the_registry_reads(project: Project) -> None:
    answers = "helper\nHelps with chores.\nRead, grep\n\nYou help.\n"
    done = nestor(["agents", "create"], cwd=project.root, env=project.env, stdin=answers)
    assert done.returncode == 0, done.stderr
    path = project.root / ".nestor/agents/helper.md"
    assert f"created {path.relative_to(project.root)}" in done.stdout
    assert path.read_text() == (
        "---\nname: helper\ndescription: Helps with chores.\ntools: [view, grep]\n---\n\nYou help.\n"
    )
    spec = project.registry().get("helper")
    assert (spec.source, spec.tools, spec.model, spec.prompt) == (
        "project",
        ("view", "grep"),
        None,
        "You help.",
    )
    assert project.registry().problems() == []


def test_create_refuses_to_overwrite_without_force_and_takes_options(project: Project) -> None:
    project.write(".nestor/agents/helper.md", REVIEWER.replace("reviewer", "helper"))
    options = ["--description", "New one.", "--tools", "", "--model", "large", "--prompt", "Be brief."]
    refused = nestor(["agents", "create", "helper", *options], cwd=project.root, env=project.env)
    assert refused.returncode == 1
    assert "error: .nestor/agents/helper.md already exists" in refused.stderr and "--force" in refused.stderr
    assert "Reviews diffs." in (project.root / ".nestor/agents/helper.md").read_text()

    done = nestor(["agents", "create", "helper", *options, "--force"], cwd=project.root, env=project.env)
    assert done.returncode == 0, done.stderr
    spec = project.registry().get("helper")
    assert (spec.description, spec.tools, spec.model, spec.prompt) == ("New one.", None, "large", "Be brief.")


def test_create_rejects_a_bad_name_and_an_empty_description_and_writes_nothing(project: Project) -> None:
    bad_name = nestor(["agents", "create", "two words"], cwd=project.root, env=project.env, stdin="")
    assert bad_name.returncode == 1 and "error: invalid agent name 'two words'" in bad_name.stderr
    no_description = nestor(
        ["agents", "create", "x", "--description", "", "--tools", "", "--model", "", "--prompt", "p"],
        cwd=project.root,
        env=project.env,
    )
    assert no_description.returncode == 1
    assert ".nestor/agents/x.md:3: description: missing (required" in no_description.stderr
    assert "nothing was written" in no_description.stderr
    assert not (project.root / ".nestor/agents").exists()


def test_create_of_a_built_in_name_overrides_it(project: Project) -> None:
    options = ["--description", "Mine.", "--tools", "view", "--model", "", "--prompt", "p"]
    done = nestor(["agents", "create", "explore", *options], cwd=project.root, env=project.env)
    assert done.returncode == 0, done.stderr
    assert "it takes precedence over the builtin agent 'explore'" in done.stdout
    assert project.registry().get("explore").source == "project"


def drafted(name: str = "sql-reviewer", extra: str = "") -> str:
    return (
        "Here is the agent:\n\n```markdown\n---\n"
        f"name: {name}\ndescription: Reviews SQL migrations.\ntools: [Read, grep]\nmodel: small\n{extra}"
        "---\nYou review SQL.\n\n```sql\nSELECT 1;\n```\n```\n"
    )


def test_create_from_description_drafts_with_the_large_model_and_writes_after_yes(
    project: Project, tmp_path: Path
) -> None:
    replies = [
        ServerReply(text=drafted()),
        ServerReply(text=drafted()),
        ServerReply(text=drafted(extra="max_turns: 0\n")),
    ]
    with ScriptedOpenAIServer(replies) as server:
        env = openai_env(tmp_path, server) | {"NESTOR_MODEL": "openai-chat:gpt-4o"}
        describe = ["agents", "create", "--from-description", "reviews SQL migrations for locking problems"]
        declined = nestor(describe, cwd=project.root, env=env, stdin="n\n")
        accepted = nestor(describe, cwd=project.root, env=env, stdin="y\n")
        invalid = nestor([*describe[:2], "broken-draft", *describe[2:], "--yes"], cwd=project.root, env=env)
        requests = server.requests
    path = project.root / ".nestor/agents/sql-reviewer.md"
    assert declined.returncode == 1 and "not written" in declined.stderr
    assert accepted.returncode == 0, accepted.stderr
    assert requests[0]["model"] == "gpt-4o"
    assert "reviews SQL migrations for locking problems" in str(requests[0]["messages"])
    assert "Its name must be" not in str(requests[0]["messages"])
    assert "Its name must be: broken-draft" in str(requests[2]["messages"])
    assert (
        "name: sql-reviewer" in accepted.stdout
        and f"created {path.relative_to(project.root)}" in accepted.stdout
    )
    spec = project.registry().get("sql-reviewer")
    assert (spec.description, spec.tools, spec.model) == (
        "Reviews SQL migrations.",
        ("view", "grep"),
        "small",
    )
    assert spec.prompt == "You review SQL.\n\n```sql\nSELECT 1;\n```"
    assert invalid.returncode == 1
    assert ".nestor/agents/broken-draft.md:6: max_turns: must be at least 1, not 0 (error)" in invalid.stderr
    assert "nothing was written" in invalid.stderr
    assert not (project.root / ".nestor/agents/broken-draft.md").exists()


def test_create_from_description_options_override_the_draft(project: Project, tmp_path: Path) -> None:
    with ScriptedOpenAIServer([ServerReply(text=drafted())]) as server:
        env = openai_env(tmp_path, server) | {"NESTOR_MODEL": "openai-chat:gpt-4o"}
        done = nestor(
            ["agents", "create", "migrations", "--from-description", "reviews SQL", "--tools", "", "--yes"],
            cwd=project.root,
            env=env,
        )
    assert done.returncode == 0, done.stderr
    spec = project.registry().get("migrations")
    assert (spec.name, spec.tools, spec.model) == ("migrations", None, "small")
    assert not (project.root / ".nestor/agents/sql-reviewer.md").exists()


def test_create_model_is_the_new_agents_and_draft_model_drafts(project: Project, tmp_path: Path) -> None:
    with ScriptedOpenAIServer([ServerReply(text=drafted())]) as server:
        env = openai_env(tmp_path, server)  # a key, and no model configured
        describe = ["agents", "create", "--from-description", "reviews SQL", "--model", "large", "--yes"]
        no_drafter = nestor(describe, cwd=project.root, env=env)
        done = nestor([*describe, "--draft-model", "openai-chat:gpt-4o"], cwd=project.root, env=env)
        requests = server.requests
    assert no_drafter.returncode == 1
    lines = no_drafter.stderr.splitlines()
    assert lines[0] == "error: no model configured to draft the agent", no_drafter.stderr
    assert "--draft-model provider:model" in lines[1] and "--model sets the new agent's own model" in lines[1]
    assert done.returncode == 0, done.stderr
    assert [request["model"] for request in requests] == ["gpt-4o"]
    assert project.registry().get("sql-reviewer").model == "large"  # --model, over the draft's "small"


def test_delete_removes_the_file_and_the_shadowed_definition_takes_over(mixed: Project) -> None:
    refused = nestor(["agents", "delete", "reviewer"], cwd=mixed.root, env=mixed.env)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert (mixed.root / ".nestor/agents/reviewer.md").exists()

    done = nestor(["agents", "delete", "reviewer", "--yes"], cwd=mixed.root, env=mixed.env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "deleted .nestor/agents/reviewer.md"
    assert "is now defined by" in done.stdout and "(user, claude format)" in done.stdout
    assert not (mixed.root / ".nestor/agents/reviewer.md").exists()
    assert mixed.registry().get("reviewer").source == "user"


def test_delete_refuses_built_ins_and_unknown_names(mixed: Project) -> None:
    builtin = nestor(["agents", "delete", "explore", "--yes"], cwd=mixed.root, env=mixed.env)
    assert builtin.returncode == 1
    assert "error: 'explore' is a built-in agent and cannot be deleted" in builtin.stderr
    assert "hint: " in builtin.stderr
    unknown = nestor(["agents", "delete", "nobody", "--yes"], cwd=mixed.root, env=mixed.env)
    assert unknown.returncode == 1 and "error: unknown agent type 'nobody'" in unknown.stderr
    folded = nestor(["agents", "delete", "TESTER", "--yes"], cwd=mixed.root, env=mixed.env)
    assert folded.returncode == 1 and "did you mean 'tester'?" in folded.stderr
    assert (mixed.root / ".claude/agents/tester.md").exists()


COLON = "---\nname: colon\ndescription: Use this agent when: the user asks\ntools: Read, Grep\n---\nAnswer.\n"
UNINDENTED = (
    "---\nname: examples\ndescription: Use it for examples. Examples:\n<example>\n"
    'user: "hi"\n</example>\nmodel: inherit\n---\nShow.\n'
)


def test_validate_names_each_repaired_file_and_fix_rewrites_it_as_a_block_scalar(project: Project) -> None:
    colon = project.write(".claude/agents/colon.md", COLON)
    examples = project.write(".claude/agents/examples.md", UNINDENTED)
    listed = nestor(["agents", "list"], cwd=project.root, env=project.env)
    assert listed.returncode == 0 and "\ncolon\t" in listed.stdout and "\nexamples\t" in listed.stdout
    checked = nestor(["agents", "validate"], cwd=project.root, env=project.env)
    assert checked.returncode == 0, checked.stdout
    lines = checked.stdout.splitlines()
    assert any(
        line.startswith(".claude/agents/colon.md:3: description: invalid YAML (the value contains ': ')")
        and line.endswith("(warning)")
        for line in lines
    )
    assert any(
        line.startswith(".claude/agents/examples.md:3: description: invalid YAML: lines 4-6 are not indented")
        for line in lines
    )
    assert lines[-1] == "2 agent files OK (2 warnings)"
    before = {spec.name: spec.description for spec in project.registry().specs()}

    fixed = nestor(["agents", "validate", "--fix"], cwd=project.root, env=project.env)

    assert fixed.returncode == 0, fixed.stdout
    assert ".claude/agents/colon.md: rewritten" in fixed.stdout
    assert fixed.stdout.splitlines()[-1] == "2 agent files OK (0 warnings)"
    assert colon.read_text() == (
        "---\nname: colon\ndescription: |-\n  Use this agent when: the user asks\n"
        "tools: Read, Grep\n---\nAnswer.\n"
    )
    assert "description: |-\n  Use it for examples. Examples:\n  <example>\n" in examples.read_text()
    assert {spec.name: spec.description for spec in project.registry().specs()} == before
    again = nestor_json(["agents", "validate", "--fix", "--json"], cwd=project.root, env=project.env)
    assert (again["fixed"], again["warnings"]) == ([], 0)


def test_create_from_description_takes_a_draft_with_an_unquoted_colon_and_writes_it_quoted(
    project: Project, tmp_path: Path
) -> None:
    draft = drafted().replace("Reviews SQL migrations.", "Use it when: a migration locks a table")
    with ScriptedOpenAIServer([ServerReply(text=draft)]) as server:
        env = openai_env(tmp_path, server) | {"NESTOR_MODEL": "openai-chat:gpt-4o"}
        done = nestor(
            ["agents", "create", "--from-description", "reviews SQL", "--yes"], cwd=project.root, env=env
        )
    assert done.returncode == 0, done.stderr
    assert "invalid YAML (the value contains ': ')" in done.stderr
    written = (project.root / ".nestor/agents/sql-reviewer.md").read_text()
    assert "description: 'Use it when: a migration locks a table'" in written
    checked = nestor(["agents", "validate"], cwd=project.root, env=project.env)
    assert checked.stdout.splitlines()[-1] == "1 agent file OK (0 warnings)", checked.stdout


def test_an_unknown_provider_is_refused_where_the_file_is_written_and_an_error_in_validate(
    project: Project,
) -> None:
    options = ["--description", "d", "--tools", "", "--prompt", "p"]
    refused = nestor(
        ["agents", "create", "m3", *options, "--model", "notaprovider:zzz"], cwd=project.root, env=project.env
    )
    assert refused.returncode == 1
    assert ".nestor/agents/m3.md:4: model: unknown provider 'notaprovider'" in refused.stderr
    assert "nothing was written" in refused.stderr and not (project.root / ".nestor/agents/m3.md").exists()
    keyless = nestor(
        ["agents", "create", "m4", *options, "--model", "openai:gpt-4o"], cwd=project.root, env=project.env
    )
    assert keyless.returncode == 0, keyless.stderr
    assert "OPENAI_API_KEY is not set" in keyless.stderr and "(warning)" in keyless.stderr

    project.write(".claude/agents/m3.md", "---\nname: m3\ndescription: d\nmodel: notaprovider:zzz\n---\np\n")
    checked = nestor(["--trust", "agents", "validate"], cwd=project.root, env=project.env)
    assert checked.returncode == 1
    lines = checked.stdout.splitlines()
    assert any(
        line.startswith(".claude/agents/m3.md:4: model: unknown provider 'notaprovider'")
        and line.endswith("(error)")
        for line in lines
    )
    assert any(line.startswith(".nestor/agents/m4.md:4: model: 'openai:gpt-4o'") for line in lines)
    assert lines[-1] == "1 error, 1 warning in the agent files"

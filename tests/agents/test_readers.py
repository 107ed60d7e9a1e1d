from __future__ import annotations

from pathlib import Path

import pytest

from nestor.agents.readers import AgentFileProblem, ReadContext, ReadResult, read_agent_file, read_agent_text
from nestor.agents.spec import AgentSpec, PermissionRuleSpec


def _read(
    tmp_path: Path,
    ecosystem: str,
    relative: str,
    text: str,
    *,
    default_name: str | None = None,
    config_dirs: tuple[Path, ...] = (),
) -> ReadResult:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    name = default_name if default_name is not None else path.stem
    return read_agent_file(ReadContext(path, "project", ecosystem, name, config_dirs))


def _spec(result: ReadResult) -> AgentSpec:
    assert result.spec is not None, [str(problem) for problem in result.problems]
    return result.spec


def _errors(result: ReadResult) -> list[AgentFileProblem]:
    return [problem for problem in result.problems if problem.severity == "error"]


def _warnings(result: ReadResult) -> list[AgentFileProblem]:
    return [problem for problem in result.problems if problem.severity == "warning"]


# nestor


def test_nestor_format_reads_every_key(tmp_path: Path) -> None:
    nestor_dir = tmp_path / ".nestor"
    (nestor_dir / "rules").mkdir(parents=True)
    (nestor_dir / "rules" / "style.md").write_text("Use tabs.")
    (nestor_dir / "skills" / "deploy").mkdir(parents=True)
    (nestor_dir / "skills" / "deploy" / "SKILL.md").write_text("Deploy like so.")
    (nestor_dir / "skills" / "lint.md").write_text("Lint like so.")
    text = """---
name: reviewer
description: Reviews code.
tools: view, grep, Read, web_*
disallowed_tools: [grep]
model: small
temperature: 0.2
max_turns: 12
timeout: 90
max_context_tokens: 32000
thoroughness: thorough
rules: [style]
skills: [deploy, lint]
color: cyan
mode: all
persist: true
background: true
inherit_context: true
permission:
  deny: ["Bash(rm *)", edit]
  allow: [bash(git status*)]
---
Review carefully.
"""
    result = _read(tmp_path, "nestor", ".nestor/agents/rev.md", text, config_dirs=(nestor_dir,))
    spec = _spec(result)
    assert result.problems == ()
    assert spec.name == "reviewer"
    assert spec.description == "Reviews code."
    assert spec.prompt == "Review carefully."
    assert spec.tools == ("view", "grep", "web_search", "web_fetch")
    assert spec.disallowed_tools == ("grep",)
    assert (spec.model, spec.temperature, spec.max_turns, spec.max_time_s) == ("small", 0.2, 12, 90.0)
    assert spec.max_context_tokens == 32000
    assert spec.thoroughness == "thorough"
    assert spec.rule_files == (nestor_dir / "rules" / "style.md",)
    assert spec.skill_files == (
        nestor_dir / "skills" / "deploy" / "SKILL.md",
        nestor_dir / "skills" / "lint.md",
    )
    assert (spec.color, spec.mode, spec.persist, spec.background, spec.inherit_context) == (
        "cyan",
        "all",
        True,
        True,
        True,
    )
    assert spec.permission == (
        PermissionRuleSpec("allow", "bash(git status*)"),
        PermissionRuleSpec("deny", "bash(rm *)"),
        PermissionRuleSpec("deny", "edit"),
    )
    assert (spec.source, spec.ecosystem, spec.path) == (
        "project",
        "nestor",
        tmp_path / ".nestor/agents/rev.md",
    )


def test_nestor_name_defaults_to_stem_and_defaults_apply(tmp_path: Path) -> None:
    spec = _spec(_read(tmp_path, "nestor", "a/helper.md", "---\ndescription: Helps.\n---\nHelp.\n"))
    assert spec.name == "helper"
    assert spec.tools is None
    assert spec.mode == "subagent"
    assert spec.model is None


def test_nestor_unknown_key_is_an_error_listing_known_keys(tmp_path: Path) -> None:
    result = _read(tmp_path, "nestor", "a/x.md", "---\ndescription: d\nmax_turn: 3\n---\n")
    assert result.spec is None
    [error] = _errors(result)
    assert (error.line, error.key) == (3, "max_turn")
    assert "max_turns" in error.message
    assert str(error) == f"{tmp_path / 'a/x.md'}:3: max_turn: {error.message}"


def test_nestor_validation_errors_name_line_and_key(tmp_path: Path) -> None:
    text = """---
description: 5
max_turns: -1
temperature: hot
timeout: 0
thoroughness: extreme
mode: boss
persist: yes please
tools: {view: true}
---
"""
    result = _read(tmp_path, "nestor", "a/x.md", text)
    assert result.spec is None
    found = {(problem.key, problem.line) for problem in _errors(result)}
    assert found == {
        ("max_turns", 3),
        ("temperature", 4),
        ("timeout", 5),
        ("thoroughness", 6),
        ("mode", 7),
        ("persist", 8),
        ("tools", 9),
    }


def test_nestor_missing_description_and_invalid_names(tmp_path: Path) -> None:
    missing = _read(tmp_path, "nestor", "a/x.md", "---\nmodel: small\n---\nbody")
    assert [(problem.key, problem.severity) for problem in missing.problems] == [("description", "error")]
    bad_name = _read(tmp_path, "nestor", "a/y.md", "---\nname: -bad name\ndescription: d\n---\n")
    assert [problem.key for problem in _errors(bad_name)] == ["name"]
    bad_stem = _read(tmp_path, "nestor", "a/has space.md", "---\ndescription: d\n---\n")
    assert bad_stem.spec is None
    assert "file name" in _errors(bad_stem)[0].message


def test_missing_rule_and_skill_files_are_errors_with_lines(tmp_path: Path) -> None:
    base = tmp_path / ".nestor"
    text = "---\ndescription: d\nrules:\n  - style\nskills: [ghost]\n---\n"
    result = _read(tmp_path, "nestor", ".nestor/agents/x.md", text, config_dirs=(base,))
    assert result.spec is None
    errors = _errors(result)
    assert [(problem.key, problem.line) for problem in errors] == [("rules", 4), ("skills", 5)]
    assert str(base / "rules" / "style.md") in errors[0].message
    assert base / "rules" / "style.md" in result.depends_on
    assert base / "skills" / "ghost" / "SKILL.md" in result.depends_on


def test_rules_fall_back_to_later_config_dirs_and_accept_paths(tmp_path: Path) -> None:
    user = tmp_path / "user"
    (user / "rules").mkdir(parents=True)
    (user / "rules" / "shared.md").write_text("shared")
    (tmp_path / "notes.md").write_text("notes")
    text = "---\ndescription: d\nrules: [shared, ../../notes.md]\n---\n"
    spec = _spec(
        _read(tmp_path, "nestor", ".nestor/agents/x.md", text, config_dirs=(tmp_path / ".nestor", user))
    )
    assert spec.rule_files == (user / "rules" / "shared.md", tmp_path / ".nestor/agents/../../notes.md")


def test_unknown_tools_are_warnings_and_the_spec_loads_without_them(tmp_path: Path) -> None:
    text = "---\ndescription: d\ntools:\n  - view\n  - NotebookEdit\n  - mcp__x__y\n  - frob\n---\n"
    result = _read(tmp_path, "nestor", "a/x.md", text)
    assert _spec(result).tools == ("view", "mcp__x__y")  # MCP tools are known once servers start
    warnings = _warnings(result)
    assert [(problem.key, problem.line) for problem in warnings] == [("tools", 5), ("tools", 7)]
    assert "NotebookEdit" in warnings[0].message
    assert "view, ls" in warnings[0].message


def test_a_close_tool_name_is_suggested_for_a_files_first_20_unknown_tools_only(tmp_path: Path) -> None:
    # Each suggestion compares the name with every name nestor knows: thousands would cost seconds.
    text = "---\nname: a\ndescription: d\ntools: [" + ", ".join(["gerp"] * 25) + "]\n---\n"
    warnings = _warnings(_read(tmp_path, "claude", "a.md", text))
    assert len(warnings) == 25
    assert all("did you mean 'grep'" in problem.message for problem in warnings[:20])
    assert all(
        "did you mean" not in problem.message and "'gerp'" in problem.message for problem in warnings[20:]
    )


def test_nestor_permission_rules_are_validated(tmp_path: Path) -> None:
    text = "---\ndescription: d\npermission:\n  deny: [frobnicate(x), bash]\n  maybe: [view]\n---\n"
    result = _read(tmp_path, "nestor", "a/x.md", text)
    assert result.spec is None
    assert [(problem.severity, problem.line) for problem in result.problems] == [("warning", 4), ("error", 5)]


def test_yaml_no_repair_reads_keeps_the_body_under_the_file_name_with_read_only_tools(tmp_path: Path) -> None:
    text = "---\nname: other\ndescription: Use it\n  when: indented\ntools: [bash]\n---\nbody\n"
    result = _read(tmp_path, "claude", "a/x.md", text)
    assert result.spec is not None
    assert (result.spec.name, result.spec.description, result.spec.prompt) == ("x", "", "body")
    assert result.spec.tools == ("view", "ls", "glob", "grep")
    [warning] = result.problems
    assert (warning.severity, warning.line, warning.key) == ("warning", 4, "")
    assert "invalid YAML" in warning.message and "front matter is ignored" in warning.message
    assert not warning.message.startswith(str(tmp_path))


def test_unreadable_file_is_an_error_problem(tmp_path: Path) -> None:
    path = tmp_path / "bin.md"
    path.write_bytes(b"---\n\xff\xfe\n---\n")
    result = read_agent_file(ReadContext(path, "user", "nestor", "bin"))
    assert result.spec is None
    assert "cannot be read" in result.problems[0].message


# Claude Code


def test_claude_agent(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    (claude / "skills" / "pdf").mkdir(parents=True)
    (claude / "skills" / "pdf" / "SKILL.md").write_text("pdf skill")
    text = """---
name: code-reviewer
description: Expert code reviewer.
tools: Read, Grep, Glob, Bash(git diff:*), NotebookEdit
disallowedTools: [Write, "Bash(rm *)"]
model: sonnet
maxTurns: 7
skills: [pdf]
background: true
color: red
permissionMode: acceptEdits
hooks: {}
isolation: worktree
frobnicate: 1
---
You review code.
"""
    result = _read(tmp_path, "claude", ".claude/agents/reviewer.md", text, config_dirs=(claude,))
    spec = _spec(result)
    assert spec.name == "code-reviewer"
    assert spec.tools == ("view", "grep", "glob", "bash")
    assert spec.disallowed_tools == ("write", "bash")
    assert (spec.model, spec.max_turns, spec.background, spec.color) == ("sonnet", 7, True, "red")
    assert spec.skill_files == (claude / "skills" / "pdf" / "SKILL.md",)
    assert spec.ecosystem == "claude"
    messages = {problem.key: problem.message for problem in _warnings(result)}
    assert messages["permissionMode"] == "not supported by nestor, ignored"
    assert "hooks" not in messages  # an agent file's own hooks are read (issue 34)
    assert messages["isolation"] == "not supported by nestor, ignored"
    assert "ignored" in messages["frobnicate"]
    tool_warnings = [problem.message for problem in _warnings(result) if problem.key == "tools"]
    assert any("gets all of it" in message and "bash(git diff:*)" in message for message in tool_warnings)
    assert any("NotebookEdit" in message for message in tool_warnings)
    disallowed = [problem.message for problem in _warnings(result) if problem.key == "disallowedTools"]
    assert len(disallowed) == 1
    assert "all of it is removed" in disallowed[0]
    assert _errors(result) == []


def test_claude_inherit_model_and_required_keys(tmp_path: Path) -> None:
    spec = _spec(_read(tmp_path, "claude", "c/a.md", "---\nname: a\ndescription: d\nmodel: inherit\n---\n"))
    assert spec.model is None
    assert spec.tools is None
    missing = _read(tmp_path, "claude", "c/b.md", "---\ndescription: d\n---\n")
    assert missing.spec is None
    assert [problem.key for problem in _errors(missing)] == ["name"]


@pytest.mark.parametrize(
    ("written", "model"),
    [("claude-sonnet-4-20250514", "anthropic:claude-sonnet-4-20250514"), ("opus", "opus"), ("x:y", "x:y")],
)
def test_a_claude_full_model_id_is_anthropics(tmp_path: Path, written: str, model: str) -> None:
    text = f"---\nname: a\ndescription: d\nmodel: {written}\n---\n"
    assert _spec(_read(tmp_path, "claude", "c/a.md", text)).model == model


# OpenCode


def test_opencode_agent(tmp_path: Path) -> None:
    text = """---
description: Reviews code for quality
mode: subagent
model: anthropic/claude-sonnet-4-20250514
temperature: 0.1
top_p: 0.9
hidden: true
steps: 5
tools:
  write: false
  patch: false
  read: true
permission:
  edit: deny
  webfetch: ask
  bash:
    "git diff*": allow
    "*": ask
---
Body prompt.
"""
    result = _read(tmp_path, "opencode", ".opencode/agent/review/quality.md", text)
    spec = _spec(result)
    assert spec.name == "quality"
    assert spec.mode == "subagent"
    assert spec.model == "anthropic:claude-sonnet-4-20250514"
    assert (spec.temperature, spec.max_turns) == (0.1, 5)
    assert spec.tools is None
    assert spec.disallowed_tools == ("write", "edit")
    assert set(spec.permission) == {
        PermissionRuleSpec("deny", "edit"),
        PermissionRuleSpec("deny", "write"),
        PermissionRuleSpec("ask", "web_fetch"),
        PermissionRuleSpec("allow", "bash(git diff*)"),
        PermissionRuleSpec("ask", "bash"),
    }
    assert [rule.action for rule in spec.permission] == sorted(
        (rule.action for rule in spec.permission), key=["allow", "ask", "deny"].index
    )
    assert [(problem.key, problem.severity) for problem in result.problems] == [("top_p", "warning")]


def test_opencode_prompt_key_overrides_body_and_default_mode_is_all(tmp_path: Path) -> None:
    (tmp_path / "oc" / "prompts").mkdir(parents=True)
    (tmp_path / "oc" / "prompts" / "p.txt").write_text("From file.\n")
    inline = _spec(
        _read(tmp_path, "opencode", "oc/a.md", "---\ndescription: d\nprompt: Inline.\n---\nBody\n")
    )
    assert (inline.prompt, inline.mode) == ("Inline.", "all")
    result = _read(
        tmp_path, "opencode", "oc/b.md", "---\ndescription: d\nprompt: '{file:./prompts/p.txt}'\n---\n"
    )
    assert _spec(result).prompt == "From file."
    assert tmp_path / "oc" / "prompts" / "p.txt" in result.depends_on
    missing = _read(
        tmp_path, "opencode", "oc/c.md", "---\ndescription: d\nprompt: '{file:./nope.txt}'\n---\n"
    )
    assert [problem.key for problem in _errors(missing)] == ["prompt"]


def test_opencode_disable_skips_without_error_and_bad_values_fail(tmp_path: Path) -> None:
    disabled = _read(tmp_path, "opencode", "oc/off.md", "---\ndescription: d\ndisable: true\n---\n")
    assert disabled.spec is None
    assert _errors(disabled) == []
    bad = _read(
        tmp_path,
        "opencode",
        "oc/bad.md",
        "---\ndescription: d\ntools: [read]\npermission: {edit: maybe}\n---\n",
    )
    assert bad.spec is None
    assert {problem.key for problem in _errors(bad)} == {"tools", "permission"}


# Gemini CLI


def test_gemini_agent_with_wildcards_and_minutes(tmp_path: Path) -> None:
    text = """---
name: investigator
description: Investigates.
kind: local
tools: [read_*, run_shell_command, "mcp_*"]
mcpServers: {x: {command: y}}
model: gemini-2.5-pro
temperature: 0.3
max_turns: 20
timeout_mins: 2.5
---
Investigate.
"""
    result = _read(tmp_path, "gemini", ".gemini/agents/inv.md", text)
    spec = _spec(result)
    assert spec.tools == ("view", "bash")
    assert spec.model == "google:gemini-2.5-pro"
    assert (spec.temperature, spec.max_turns, spec.max_time_s) == (0.3, 20, 150.0)
    assert {(problem.key, problem.severity) for problem in result.problems} == {("tools", "warning")}
    assert spec.own_mcp_servers[0][0] == "x" and spec.own_mcp_servers[0][1].command == "y"


def test_gemini_remote_agents_are_skipped_with_a_warning(tmp_path: Path) -> None:
    result = _read(tmp_path, "gemini", "g/r.md", "---\nname: r\ndescription: d\nkind: remote\n---\n")
    assert result.spec is None
    assert [problem.severity for problem in result.problems] == ["warning"]


# emdash


def test_emdash_agent(tmp_path: Path) -> None:
    emdash = tmp_path / ".emdash"
    (emdash / "rules").mkdir(parents=True)
    (emdash / "rules" / "git.md").write_text("rule")
    text = """---
description: GitHub integration agent
model: claude-sonnet-4-20250514
tools: [grep, glob, read_file, list_files, semantic_search]
rules: [git]
verifiers: [v]
mcp_servers:
  github:
    command: github-mcp-server
---
# System Prompt

You are a GitHub specialist.

```md
# Examples
```

# Examples

## Example 1
User: find PRs
"""
    result = _read(tmp_path, "emdash", ".emdash/agents/github.md", text, config_dirs=(emdash,))
    spec = _spec(result)
    assert spec.name == "github"
    assert spec.tools == ("grep", "glob", "view", "ls")
    assert spec.rule_files == (emdash / "rules" / "git.md",)
    assert spec.prompt.startswith("# System Prompt")
    assert "```md\n# Examples\n```" in spec.prompt
    assert "Example 1" not in spec.prompt
    assert {problem.key for problem in _warnings(result)} == {"verifiers"}
    ((name, github),) = spec.own_mcp_servers
    assert (name, github.command, github.kind) == ("github", "github-mcp-server", "stdio")


def test_emdash_defaults_to_read_only_tools(tmp_path: Path) -> None:
    spec = _spec(_read(tmp_path, "emdash", "e/x.md", "---\ndescription: d\n---\nbody"))
    assert spec.tools == ("view", "ls", "glob", "grep")
    assert spec.is_read_only()


# CodeAlly


def test_codeally_agent_ignores_timestamps_silently(tmp_path: Path) -> None:
    text = """---
name: "helper"
description: "Helps"
tools: ["bash", "read"]
temperature: 0.7
model: "claude-3-sonnet"
created_at: "2024-01-01T00:00:00Z"
updated_at: 2024-01-02
---
Help.
"""
    result = _read(tmp_path, "codeally", ".code_ally/agents/helper.md", text)
    spec = _spec(result)
    assert (spec.name, spec.tools, spec.temperature, spec.model) == (
        "helper",
        ("bash", "view"),
        0.7,
        "claude-3-sonnet",
    )
    assert result.problems == ()


def test_codeally_missing_description_is_only_a_warning(tmp_path: Path) -> None:
    result = _read(tmp_path, "codeally", "ca/x.md", "---\nname: x\n---\nbody")
    assert _spec(result).description == ""
    assert [(problem.key, problem.severity) for problem in result.problems] == [("description", "warning")]


# mini-cc


def test_minicc_json_agent(tmp_path: Path) -> None:
    text = """{
  "name": "reviewer",
  "description": "Code review expert",
  "tools": ["bash", "read_file"],
  "prompt": "You are a code review expert."
}
"""
    spec = _spec(_read(tmp_path, "mini-cc", ".mini-cc/agents/reviewer.json", text))
    assert (spec.name, spec.tools, spec.prompt) == (
        "reviewer",
        ("bash", "view"),
        "You are a code review expert.",
    )
    assert spec.ecosystem == "mini-cc"
    every = _spec(
        _read(tmp_path, "mini-cc", "m/all.json", '{"description": "d", "tools": "*", "prompt": "p"}')
    )
    assert every.tools is None
    assert every.name == "all"


def test_minicc_invalid_json_and_wrong_types_give_lines(tmp_path: Path) -> None:
    broken = _read(tmp_path, "mini-cc", "m/broken.json", '{\n  "name": "x",\n  "tools": [bash]\n}\n')
    assert broken.spec is None
    [error] = broken.problems
    assert (error.line, error.severity) == (3, "error")
    assert "invalid JSON" in error.message
    wrong = _read(tmp_path, "mini-cc", "m/wrong.json", '{\n  "description": "d",\n  "tools": 3\n}')
    assert [(problem.key, problem.line) for problem in _errors(wrong)] == [("tools", 3)]
    not_object = _read(tmp_path, "mini-cc", "m/list.json", "[1, 2]")
    assert not_object.spec is None


@pytest.mark.parametrize(
    ("tools", "cause"),
    [
        ("[" * 100_000 + "]" * 100_000, "levels deep"),  # stopped the decoder with a RecursionError
        ("[" * 40 + "]" * 40, "levels deep"),
        ("[" + ", ".join(['"view"'] * 20_000) + "]", "more than 10,000 values"),
    ],
    ids=["100,000 nested lists", "40 nested lists", "20,000 values"],
)
def test_minicc_json_too_deep_or_too_large_is_one_error(tmp_path: Path, tools: str, cause: str) -> None:
    result = _read(tmp_path, "mini-cc", "m/deep.json", '{"name": "x", "tools": ' + tools + "}")
    assert result.spec is None
    [error] = result.problems
    assert error.severity == "error" and cause in error.message


def test_a_results_values_count_its_front_matter(tmp_path: Path) -> None:
    text = "---\nname: a\ndescription: d\ntools: [Read, Grep]\n---\nBody.\n"
    # the mapping, two keys with their scalars, a key with its list of two
    assert _read(tmp_path, "claude", "a.md", text).values == 1 + 2 * 2 + 2 + 2
    assert _read(tmp_path, "mini-cc", "a.json", '{"name": "a", "tools": ["bash"]}').values == 1 + 2 * 2 + 1
    assert _read(tmp_path, "claude", "notes.md", "no front matter").values == 0


# deepagents


def test_deepagents_agent_is_named_after_its_folder(tmp_path: Path) -> None:
    text = "---\ndescription: Researches.\nmodel: anthropic:claude-sonnet-4\n---\nResearch.\n"
    spec = _spec(
        _read(
            tmp_path, "deepagents", ".deepagents/agents/researcher/AGENTS.md", text, default_name="researcher"
        )
    )
    assert (spec.name, spec.model, spec.prompt) == ("researcher", "anthropic:claude-sonnet-4", "Research.")
    missing = _read(
        tmp_path, "deepagents", ".deepagents/agents/x/AGENTS.md", "---\nname: x\n---\n", default_name="x"
    )
    assert missing.spec is None
    assert [problem.key for problem in _errors(missing)] == ["description"]


def test_read_agent_text_rejects_unknown_formats(tmp_path: Path) -> None:
    context = ReadContext(tmp_path / "x.md", "project", "cursor", "x")
    with pytest.raises(ValueError, match="cursor"):
        read_agent_text(context, "")


def test_foreign_markdown_without_front_matter_is_not_an_agent(tmp_path: Path) -> None:
    readme = _read(tmp_path, "claude", ".claude/agents/README.md", "# Our agents\n\nNotes.\n")
    assert readme.spec is None
    assert [(problem.severity, problem.line) for problem in readme.problems] == [("warning", 1)]
    nestor = _read(tmp_path, "nestor", ".nestor/agents/README.md", "# Notes\n")
    assert [(problem.severity, problem.key) for problem in nestor.problems] == [("error", "description")]


def test_nestor_permission_also_reads_opencodes_tool_to_action_shape(tmp_path: Path) -> None:
    text = "---\ndescription: d\npermission: { edit: deny, bash: { 'git diff*': allow, '*': ask } }\n---\n"
    spec = _spec(_read(tmp_path, "nestor", "a/x.md", text))
    assert set(spec.permission) >= {
        PermissionRuleSpec("deny", "edit"),
        PermissionRuleSpec("allow", "bash(git diff*)"),
        PermissionRuleSpec("ask", "bash"),
    }


MARKDOWN_FORMATS = [
    ("nestor", "x.md", "name: x\n"),
    ("claude", "x.md", "name: x\n"),
    ("opencode", "x.md", ""),
    ("gemini", "x.md", "name: x\n"),
    ("emdash", "x.md", ""),
    ("codeally", "x.md", "name: x\n"),
    ("deepagents", "x/AGENTS.md", "name: x\n"),
]


@pytest.mark.parametrize(
    ("ecosystem", "relative", "name"), MARKDOWN_FORMATS, ids=[f[0] for f in MARKDOWN_FORMATS]
)
def test_a_colon_in_a_description_loads_in_every_markdown_format_with_a_warning_on_its_line(
    tmp_path: Path, ecosystem: str, relative: str, name: str
) -> None:
    text = f"---\n{name}description: Use this agent when: the user asks\n---\nThe prompt.\n"
    result = _read(tmp_path, ecosystem, relative, text, default_name="x")
    spec = _spec(result)
    assert (spec.name, spec.description, spec.prompt) == (
        "x",
        "Use this agent when: the user asks",
        "The prompt.",
    )
    [warning] = [problem for problem in _warnings(result) if problem.key == "description"]
    assert warning.line == 2 + name.count("\n")
    assert "invalid YAML" in warning.message and "quoted" in warning.message

"""``nestor hooks list|test|approve`` and a project's hooks end to end: never run before approval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nestor.cli.hooks_cmd import ask_to_approve_hooks
from nestor.config.loading import load_settings
from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.cli.support import clean_env, git_repo, nestor, nestor_json, openai_env

pytestmark = pytest.mark.timeout(120)
MODEL = ["--model", "openai-chat:gpt-4o"]


def claude_settings(marker: Path, *, word: str = "ran") -> str:
    """A project's .claude/settings.json whose SessionStart hook writes ``word`` to ``marker``."""
    hook = {"type": "command", "command": f"echo {word} >> {marker}"}
    return json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}})


def test_a_projects_hooks_never_run_untrusted_nor_trusted_until_approved_and_again_after_a_change(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "marker"
    repo = git_repo(tmp_path / "repo", {".claude/settings.json": claude_settings(marker)})
    with ScriptedOpenAIServer([ServerReply(text="ok")] * 8) as model:
        env = openai_env(tmp_path, model)
        untrusted = nestor(["run", *MODEL, "hi"], cwd=repo, env=env)
        assert untrusted.returncode == 0, untrusted.stderr
        assert not marker.exists() and ".claude/settings.json hooks" in untrusted.stderr

        flagged = nestor(["run", "--trust", *MODEL, "hi"], cwd=repo, env=env)  # --trust approves no hook
        assert flagged.returncode == 0, flagged.stderr
        assert not marker.exists()
        assert (
            "1 project hook not approved, skipped: SessionStart[*] in .claude/settings.json: "
            f"echo ran >> {marker}; `nestor hooks approve` shows and approves them"
        ) in flagged.stderr
        (listed,) = nestor_json(["--trust", "hooks", "list", "--json"], cwd=repo, env=env)["hooks"]
        assert (listed["event"], listed["source"], listed["state"], listed["runs"]) == (
            "SessionStart",
            ".claude/settings.json",
            "new",
            False,
        )

        approved = nestor(["--trust", "hooks", "approve"], cwd=repo, env=env)
        assert approved.returncode == 0, approved.stderr
        assert (
            f"approved hook SessionStart[*] in .claude/settings.json:\n  echo ran >> {marker}"
            in approved.stdout
        )
        ran = nestor(["run", "--trust", *MODEL, "hi"], cwd=repo, env=env)
        assert ran.returncode == 0, ran.stderr
        assert marker.read_text() == "ran\n" and "not approved" not in ran.stderr

        (repo / ".claude" / "settings.json").write_text(claude_settings(marker, word="changed"))
        changed = nestor(["run", "--trust", *MODEL, "hi"], cwd=repo, env=env)
        assert marker.read_text() == "ran\n" and "1 project hook not approved, skipped" in changed.stderr
        (listed,) = nestor_json(["--trust", "hooks", "list", "--json"], cwd=repo, env=env)["hooks"]
        assert listed["state"] == "changed"


def test_the_repl_asks_once_per_hook_again_after_a_change_and_not_after_a_no(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    repo = git_repo(tmp_path / "repo", {".claude/settings.json": claude_settings(marker)})
    env = clean_env(tmp_path / "home")
    asked: list[str] = []

    def answer(question: str) -> str:
        asked.append(question)
        return "y"

    settings = load_settings(repo, env=env, trusted=True, user_config_path=tmp_path / "none.toml")
    ask_to_approve_hooks(settings, answer)
    ask_to_approve_hooks(settings, answer)
    assert len(asked) == 1 and f"echo ran >> {marker}" in asked[0] and "outside the sandbox" in asked[0]
    (repo / ".claude" / "settings.json").write_text(claude_settings(marker, word="changed"))
    settings = load_settings(repo, env=env, trusted=True, user_config_path=tmp_path / "none.toml")
    ask_to_approve_hooks(settings, lambda question: asked.append(question) or "n")
    assert len(asked) == 2 and "changed since you approved it" in asked[1]
    ask_to_approve_hooks(settings, lambda question: asked.append(question) or "n")
    assert len(asked) == 2  # declined: not asked again while it stays so, and skipped
    listed = nestor(["--trust", "hooks", "list"], cwd=repo, env=env)
    assert "(declined; not approved: does not run)" in listed.stdout
    approved = nestor(["--trust", "hooks", "approve"], cwd=repo, env=env)
    assert "declined before" in approved.stdout
    listed = nestor(["--trust", "hooks", "list"], cwd=repo, env=env)
    assert "(approved; runs)" in listed.stdout


def test_hooks_test_prints_what_each_hook_decided(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = clean_env(tmp_path / "home")
    config = Path(env["XDG_CONFIG_HOME"]) / "nestor" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[[hooks.PreToolUse]]\nmatcher = "Bash"\n'
        'hooks = [{ type = "command", '
        "command = \"grep -q 'rm -rf' && echo 'no rm' >&2 && exit 2; exit 0\" }]\n"
    )
    blocked = nestor(
        ["hooks", "test", "PreToolUse", "--tool", "Bash", "--input", '{"command": "rm -rf /"}'],
        cwd=project,
        env=env,
    )
    assert blocked.returncode == 0, blocked.stderr
    assert '"permissionDecision": "deny", "permissionDecisionReason": "no rm"' in blocked.stdout
    other = nestor(["hooks", "test", "PreToolUse", "--tool", "view"], cwd=project, env=env)
    assert other.stdout == "no hook ran on PreToolUse for view\n"
    listed = nestor(["hooks", "list"], cwd=project, env=env)
    assert "PreToolUse [Bash] grep -q" in listed.stdout and f"from {config} (user; runs)" in listed.stdout
    unknown = nestor(["hooks", "test", "PreToolCall"], cwd=project, env=env)
    assert unknown.returncode == 2 and "unknown hook event 'PreToolCall'" in unknown.stderr


def test_an_invalid_hook_config_is_one_line_naming_the_file_and_key(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = clean_env(tmp_path / "home")
    config = Path(env["XDG_CONFIG_HOME"]) / "nestor" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[[hooks.PreToolCall]]\nhooks = [{ type = "command", command = "true" }]\n')
    done = nestor(["hooks", "list"], cwd=project, env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].startswith(f"error: {config}: hooks.PreToolCall")
    settings_file = tmp_path / "home" / ".claude" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    config.write_text("")
    settings_file.write_text(
        '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command"}]}]}}'
    )
    done = nestor(["hooks", "list"], cwd=project, env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == (
        f"error: {settings_file}: hooks.PreToolUse.0.hooks.0.command: this key is required"
    )

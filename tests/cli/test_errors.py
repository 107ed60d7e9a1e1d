"""Bad input ends in one clear line of cause and one of what to do, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.support import clean_env, nestor


def assert_one_clear_error(stderr: str, *fragments: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr
    assert lines[0].startswith("error: "), stderr
    assert len(lines) <= 2, stderr
    if len(lines) == 2:
        assert lines[1].startswith("hint: "), stderr
    for fragment in fragments:
        assert fragment in stderr, stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def test_no_model_configured_with_a_key_set(project: Path, tmp_path: Path) -> None:
    # Without any key nestor runs its embedded model; with one, it asks which model to use.
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test")
    done = nestor(["run", "hi"], cwd=project, env=env)
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, "no model configured", "--model")


def test_missing_api_key_names_the_variable(project: Path, tmp_path: Path) -> None:
    done = nestor(
        ["run", "--model", "anthropic:claude-sonnet-4-5", "hi"], cwd=project, env=clean_env(tmp_path / "home")
    )
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, "ANTHROPIC_API_KEY")


def test_unknown_provider_lists_the_known_ones(project: Path, tmp_path: Path) -> None:
    done = nestor(["run", "--model", "nosuch:model", "hi"], cwd=project, env=clean_env(tmp_path / "home"))
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, "nosuch", "anthropic")


def test_model_without_provider_prefix(project: Path, tmp_path: Path) -> None:
    done = nestor(["run", "--model", "gpt-4o", "hi"], cwd=project, env=clean_env(tmp_path / "home"))
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, "provider:model")


def test_bad_config_names_the_file_and_the_key(project: Path, tmp_path: Path) -> None:
    (project / "nestor.toml").write_text('[limits]\nmax_iterations = "many"\n')
    done = nestor(["run", "hi"], cwd=project, env=clean_env(tmp_path / "home"))
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, "nestor.toml", "max_iterations")


def test_config_syntax_error_names_the_line(project: Path, tmp_path: Path) -> None:
    (project / "nestor.toml").write_text("[models]\nlarge = \n")
    done = nestor(["run", "hi"], cwd=project, env=clean_env(tmp_path / "home"))
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, "nestor.toml", "line 2")


def test_deeply_nested_config_and_agent_file_name_the_file(project: Path, tmp_path: Path) -> None:
    (project / "nestor.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    done = nestor(["models"], cwd=project, env=clean_env(tmp_path / "home"))
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, str(project / "nestor.toml"), "levels deep")
    (project / "nestor.toml").unlink()
    agent = project / ".nestor" / "agents" / "deep.md"
    agent.parent.mkdir(parents=True)
    agent.write_text("---\nname: deep\ndescription: " + "{a: " * 50_000 + "}" * 50_000 + "\n---\nbody\n")
    done = nestor(["agents", "validate"], cwd=project, env=clean_env(tmp_path / "home"))
    assert done.returncode == 1 and "Traceback" not in done.stderr and "unexpected" not in done.stderr
    assert ".nestor/agents/deep.md:2: the front matter nests" in done.stdout


def test_bad_permission_rule(project: Path, tmp_path: Path) -> None:
    (project / "nestor.toml").write_text(
        '[models]\nlarge = "ollama:qwen"\n[permissions]\ndeny = ["bash(git"]\n'
    )
    done = nestor(["run", "--trust", "hi"], cwd=project, env=clean_env(tmp_path / "home"))
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, "bash(git", "permissions.deny")


def test_unreadable_database_is_refused_and_left_untouched(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = clean_env(home)
    database = Path(env["NESTOR_HOME"]) / "nestor.db"
    database.parent.mkdir(parents=True)
    garbage = b"this is not a database" * 100
    database.write_bytes(garbage)
    done = nestor(["sessions", "list"], cwd=project, env=env)
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, str(database), "NESTOR_HOME")
    assert database.read_bytes() == garbage


def test_unknown_session_id(project: Path, tmp_path: Path) -> None:
    done = nestor(["sessions", "show", "ses_nope"], cwd=project, env=clean_env(tmp_path / "home"))
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, "ses_nope", "nestor sessions list")


def test_continue_without_a_session(project: Path, tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home", NESTOR_MODEL="ollama:qwen")
    done = nestor(["run", "--continue", "hi"], cwd=project, env=env)
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, "no session to continue")


def test_empty_prompt_on_stdin(project: Path, tmp_path: Path) -> None:
    done = nestor(["run"], cwd=project, env=clean_env(tmp_path / "home"), stdin="  \n")
    assert done.returncode == 1
    assert_one_clear_error(done.stderr, "empty")


def test_debug_shows_the_traceback(project: Path, tmp_path: Path) -> None:
    done = nestor(
        ["run", "--debug", "--model", "nosuch:model", "hi"], cwd=project, env=clean_env(tmp_path / "home")
    )
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "error: " in done.stderr


def test_version_is_fast_path(project: Path, tmp_path: Path) -> None:
    done = nestor(["--version"], cwd=project, env=clean_env(tmp_path / "home"))
    assert done.returncode == 0 and done.stdout.startswith("nestor ")


def test_models_lists_roles_with_fallback_and_credentials(project: Path, tmp_path: Path) -> None:
    import json

    env = clean_env(tmp_path / "home", NESTOR_MODEL="anthropic:claude-sonnet-4-5", ANTHROPIC_API_KEY="k")
    done = nestor(["models", "--json"], cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    rows = {row["role"]: row for row in json.loads(done.stdout)}
    assert rows["large"]["model"] == rows["small"]["model"] == "anthropic:claude-sonnet-4-5"
    assert rows["large"]["has_credentials"] is True
    env.pop("ANTHROPIC_API_KEY")
    rows = {row["role"]: row for row in json.loads(nestor(["models", "--json"], cwd=project, env=env).stdout)}
    assert rows["large"]["has_credentials"] is False and "ANTHROPIC_API_KEY" in rows["large"]["detail"]

"""Which servers a project gets: detected on PATH, configured, one per language, none untrusted."""

from __future__ import annotations

import time
from pathlib import Path

from nestor.config.sections import LspServerConfig
from nestor.tools.lsp.manager import LspManager
from nestor.tools.lsp.servers import ServerSpec, language_id, resolve_servers


def programs(folder: Path, *names: str) -> dict[str, str]:
    """An environment whose PATH is ``folder`` holding executables called ``names``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("#!/bin/sh\n", encoding="utf-8")
        (folder / name).chmod(0o755)
    return {"PATH": str(folder)}


def by_name(specs: list[ServerSpec]) -> dict[str, tuple[str, str]]:
    return {spec.name: (spec.state, spec.problem) for spec in specs}


def test_servers_on_path_are_detected_and_one_runs_per_language(tmp_path: Path) -> None:
    env = programs(tmp_path / "bin", "pyright-langserver", "pylsp", "gopls")
    specs = resolve_servers({}, trusted=True, env=env)
    states = by_name(specs)
    assert states["pyright"] == ("available", "")
    assert states["pylsp"] == ("disabled", "another python server runs instead")
    assert states["gopls"] == ("available", "")
    assert states["clangd"] == ("not found", "")
    pyright = next(spec for spec in specs if spec.name == "pyright")
    assert pyright.command == (str(tmp_path / "bin" / "pyright-langserver"), "--stdio")


def test_configuration_turns_servers_off_adds_its_own_and_names_mistakes(tmp_path: Path) -> None:
    env = programs(tmp_path / "bin", "pyright-langserver", "pylsp", "solargraph")
    configured = {
        "pyright": LspServerConfig(enabled=False),
        "ruby": LspServerConfig(command="solargraph", args=("stdio",), extensions=(".rb",)),
        "mystery": LspServerConfig(),
        "gone": LspServerConfig(command="not-installed", extensions=(".x",)),
        "gopls": LspServerConfig(command="solargraph"),  # a known server's program elsewhere
    }
    specs = resolve_servers(configured, trusted=True, env=env)
    states = by_name(specs)
    assert states["pyright"] == ("disabled", "[lsp.pyright] enabled = false")
    assert states["pylsp"] == ("available", "")  # the next Python server takes pyright's place
    assert states["ruby"] == ("available", "")
    assert states["mystery"][0] == "failed"
    assert states["mystery"][1].startswith(
        "[lsp.mystery] has no command and mystery is not a server nestor knows"
    )
    assert states["gone"] == ("failed", "[lsp.gone]: not-installed is not on PATH; fix command")
    ruby = next(spec for spec in specs if spec.name == "ruby")
    assert (ruby.language, ruby.extensions, ruby.source) == ("rb", (".rb",), "configured")
    gopls = next(spec for spec in specs if spec.name == "gopls")
    assert (gopls.language, gopls.extensions, gopls.root_markers) == ("go", (".go",), ("go.mod", "go.work"))
    assert gopls.command == (str(tmp_path / "bin" / "solargraph"),) and gopls.state == "available"


def test_no_server_runs_in_a_folder_that_is_not_trusted(tmp_path: Path) -> None:
    env = programs(tmp_path / "bin", "pylsp")
    configured = {"mine": LspServerConfig(command="pylsp", extensions=(".py",))}
    states = by_name(resolve_servers(configured, trusted=False, env=env))
    untrusted = ("untrusted", "this folder is not trusted; run `nestor trust` to use it")
    assert states["pylsp"] == untrusted and states["mine"] == untrusted


def test_a_server_is_given_to_a_project_in_its_language_only(tmp_path: Path) -> None:
    env = programs(tmp_path / "bin", "pylsp")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# docs\n", encoding="utf-8")
    assert not LspManager({}, root=docs, trusted=True, env=env, log_dir=tmp_path / "logs").available()
    src_layout = tmp_path / "lib"
    (src_layout / "src").mkdir(parents=True)
    (src_layout / "src" / "lib.py").write_text("", encoding="utf-8")
    assert LspManager({}, root=src_layout, trusted=True, env=env, log_dir=tmp_path / "logs").available()


async def test_a_project_without_a_server_costs_no_time(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text("print(1)\n", encoding="utf-8")
    manager = LspManager(
        {}, root=project, trusted=True, env={"PATH": str(tmp_path / "none")}, log_dir=tmp_path
    )
    started = time.monotonic()
    assert not manager.available()
    assert await manager.after_change(project / "main.py", "main.py", lambda _path: True) == ""
    assert time.monotonic() - started < 0.1
    assert manager.starting() == []


def test_language_ids() -> None:
    assert [language_id(Path(f"x{suffix}")) for suffix in (".py", ".tsx", ".hpp", ".h", ".rb")] == [
        *("python", "typescriptreact", "cpp", "c", "rb"),
    ]

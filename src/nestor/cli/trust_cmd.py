"""``nestor trust``: the user's decision that a folder's own settings may apply, and the REPL's question."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from nestor.cli.options import CommonOptions

if TYPE_CHECKING:
    from nestor.config.settings import Settings


def run_trust(options: CommonOptions, path: Path | None, *, remove: bool, list_folders: bool) -> None:
    """Trust, stop trusting or list folders, printing one line per outcome.

    Raises:
        NestorError: The path is not a folder, or the trust list cannot be read or written.

    """
    from nestor.app.records import TrustedFolders
    from nestor.config.paths import resolve_data_dir
    from nestor.core.errors import NestorError

    folders = TrustedFolders(resolve_data_dir())
    if list_folders:
        entries = folders.folders()
        for entry in entries:
            print(f"{entry.path}  (since {entry.trusted_at})")
        if not entries:
            print("no trusted folders")
        return
    folder = (path or options.project_root).expanduser()
    if remove:
        if folders.revoke(folder):
            print(f"no longer trusted: {folder.resolve()}")
        else:
            print(f"was not trusted: {folder.resolve()} (nestor trust --list shows the trusted folders)")
        return
    if not folder.is_dir():
        raise NestorError(f"{folder} is not a folder", hint="pass the project's directory: nestor trust PATH")
    entry = folders.trust(folder)
    print(
        f"trusted: {entry.path} (its nestor.toml and agent files now apply in full; its MCP servers "
        "start once you approve them: nestor mcp approve)"
    )
    if entry.path in (Path.home().resolve(), Path("/")):
        print(
            f"note: every folder inside {entry.path} is trusted too, every repository you clone there "
            f"included; nestor trust --remove {entry.path} undoes it",
            file=sys.stderr,
        )


def settings_after_asking(options: CommonOptions, settings: Settings, ask: Callable[[str], str]) -> Settings:
    """Ask once whether to trust an untrusted folder whose settings were ignored; reload if so.

    Nothing is asked when the folder is trusted or nothing was ignored for lack of trust. A "yes"
    is stored (the question is not asked again for this folder); anything else keeps the run
    untrusted, and App names what was ignored.
    """
    untrusted = [item.key for item in settings.ignored if item.reason == "untrusted"]
    if settings.project_trusted or not untrusted:
        return settings
    from dataclasses import replace

    from nestor.app.records import TrustedFolders
    from nestor.config.paths import resolve_data_dir

    question = (
        f"Do you trust the files in {settings.project_root}? Its nestor.toml sets {', '.join(untrusted)}, "
        "which nestor applies only in folders you trust. Trust this folder? [y/N] "
    )
    try:
        answer = ask(question)
    except EOFError:
        return settings
    if answer.strip().lower() not in ("y", "yes"):
        return settings
    TrustedFolders(resolve_data_dir()).trust(Path(settings.project_root))
    return replace(options, trust=True).load_settings()

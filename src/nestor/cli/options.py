"""Options shared by the commands, and turning them into :class:`~nestor.config.Settings`."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nestor.config.settings import Settings


@dataclass(frozen=True)
class CommonOptions:
    """Flags given on the command line (None or False when not given)."""

    model: str | None = None
    small_model: str | None = None
    yolo: bool = False
    debug: bool = False
    directory: Path | None = None
    max_iterations: int | None = None
    max_tokens: int | None = None
    max_time_s: float | None = None
    trust: bool = False

    @classmethod
    def merge(cls, parent: CommonOptions | None, **given: Any) -> CommonOptions:
        """Options of a subcommand: its own flags where given, else the root command's."""
        base = parent or cls()
        # `is`, not `in (None, False)`: 0 == False, and --max-tokens 0 (no limit) is a value.
        changes = {key: value for key, value in given.items() if value is not None and value is not False}
        return replace(base, **changes)

    @property
    def project_root(self) -> Path:
        """The project directory, resolved."""
        return (self.directory or Path(os.getcwd())).resolve()

    def project_trusted(self) -> bool:
        """Whether the project's settings apply: ``--trust``, or the user trusts its folder."""
        if self.trust:
            return True
        from nestor.app.records import TrustedFolders
        from nestor.config.paths import resolve_data_dir
        from nestor.core.errors import StoreError

        folders = TrustedFolders(resolve_data_dir())
        try:
            folders.folders()
        except StoreError as error:
            # Untrusted is the safe side, but the user should know why their trust is gone.
            print(f"nestor: {error.message}; {error.hint}", file=sys.stderr)
            return False
        return folders.is_trusted(self.project_root)

    def load_settings(self) -> Settings:
        """Load settings for the project, with these flags on top."""
        from nestor.config.loading import CliOverrides, load_settings

        overrides = CliOverrides(
            model=self.model,
            small_model=self.small_model,
            yolo=self.yolo,
            max_iterations=self.max_iterations,
            max_tokens=self.max_tokens,
            max_time_s=self.max_time_s,
        )
        return load_settings(self.project_root, overrides=overrides, trusted=self.project_trusted())

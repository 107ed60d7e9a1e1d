"""What the bash rules' tests share: a bash request, a decision under given rules, a real run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from nestor.core.permission import PermissionRequest
from nestor.permissions import PermissionPolicy

ROOT = "/repo"


def bash(command: str) -> PermissionRequest:
    """The request the bash tool makes for ``command``."""
    return PermissionRequest("bash", "execute", command, f"Run: {command}", grant_key=command)


def decide(
    command: str,
    *,
    allow: tuple[str, ...] = (),
    ask: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
    yolo: bool = False,
    root: str | Path = ROOT,
) -> str:
    """The decision (allow, ask or deny) for running ``command`` under these rules."""
    policy = PermissionPolicy.from_config(allow, ask, deny, project_root=str(root), yolo=yolo)
    return policy.decide(bash(command)).kind


def leaves(command: str, folder: Path, marker: str = "P") -> bool:
    """Run ``command`` with bash in ``folder``; True when the file ``marker`` is there afterwards."""
    subprocess.run(["bash", "-c", command], cwd=folder, capture_output=True, timeout=20, check=False)
    return (folder / marker).exists()

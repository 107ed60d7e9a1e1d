"""How much of a project's agent files nestor reads: a bound on the work a repository can cause.

Every agent file is read before the first request (the ``task`` tool lists the agents), and a
repository can hold any number of them: 20,000 files held a start for over 20 s. So the registry
reads a project's agent directories in precedence order (each in name order) and stops at the first
of these limits: :attr:`AgentFileLimits.files` files, :attr:`AgentFileLimits.bytes` bytes,
:attr:`AgentFileLimits.values` front-matter values (what readers spend time on), and
:attr:`AgentFileLimits.entries` directory entries looked at. The files after that point are not
read; one warning says where reading stopped. The user's own agent files are not limited.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nestor.agents.fields import AgentFileProblem


@dataclass(frozen=True, slots=True)
class AgentFileLimits:
    """The most of a project's agent files read on each look at its directories.

    Attributes:
        files: Agent files read (a large collection of agents has a few hundred).
        bytes: Their total size.
        values: The values their front matter holds in total (a file has a few dozen), and the
            files those make nestor look for (rules, skills, prompt files), which it looks for
            again on every refresh.
        entries: Directory entries looked at while listing the agent directories (each directory
            opened and each ``AGENTS.md`` looked for counts as one too).

    """

    files: int = 500
    bytes: int = 4_000_000
    values: int = 25_000
    entries: int = 10_000

    def describe(self) -> str:
        """The limits in a few words, for the notice."""
        return (
            f"{self.files:,} agent files of a project ({self.bytes / 1_000_000:g} MB, {self.values:,} "
            f"front-matter values, {self.entries:,} directory entries)"
        )


PROJECT_LIMITS = AgentFileLimits()
"""The limits nestor applies to every project."""


class LimitTally:
    """What one look at a project's agent directories has listed and read, against the limits.

    Listing stops when the entries run out; reading stops at the first file past another limit.
    Files listed before the entries ran out are still read, within the other limits.

    Args:
        limits: The limits.

    """

    def __init__(self, limits: AgentFileLimits) -> None:
        self.limits = limits
        self.files = 0
        self.bytes = 0
        self.values = 0
        self.entries = 0
        self.stopped_at: Path | None = None
        self._listing_done = False
        self._reading_done = False

    @property
    def reading(self) -> bool:
        """True until a file was refused: the files after it are not read either."""
        return not self._reading_done

    @property
    def listing(self) -> bool:
        """True while more directory entries may be looked at (and read)."""
        return not self._listing_done and not self._reading_done

    def look_at_entry(self, directory: Path) -> bool:
        """Count one entry of ``directory``; False (listing stops there) once the entries ran out."""
        if not self.listing:
            return False
        if self.entries >= self.limits.entries:
            self._listing_done = True
            self._stop(directory)
            return False
        self.entries += 1
        return True

    def admit(self, path: Path, size: int) -> bool:
        """Whether the file ``path`` of ``size`` bytes is read; False (reading stops there) past a limit."""
        if self._reading_done:
            return False
        limits = self.limits
        if self.files >= limits.files or self.bytes + size > limits.bytes or self.values >= limits.values:
            self._reading_done = True
            self._stop(path)
            return False
        return True

    def add(self, size: int, values: int) -> None:
        """Count a file read: its size and its values (its front matter's, and the files it attaches)."""
        self.files += 1
        self.bytes += size
        self.values += values

    def problem(self) -> AgentFileProblem | None:
        """The warning naming where the limits stopped nestor, or None when every file was read."""
        if self.stopped_at is None:
            return None
        message = (
            f"nestor reads at most {self.limits.describe()} and stopped here: this and the agent files "
            "after it (in precedence order) are ignored; remove the ones the project does not need"
        )
        return AgentFileProblem(self.stopped_at, 1, "", message, "warning")

    def _stop(self, path: Path) -> None:
        if self.stopped_at is None:
            self.stopped_at = path

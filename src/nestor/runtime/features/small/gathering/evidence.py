"""What retrieval hands a small model: regions of files, search hits, and the evidence read from them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

ELISION = "    ..."


@dataclass(frozen=True, slots=True)
class Region:
    """Lines ``start``..``end`` (1-based, inclusive) of ``path``, chosen as evidence."""

    path: str
    start: int
    end: int
    score: float
    label: str = ""
    elided: tuple[int, int] | None = None
    """Lines of a long docstring in the region that are left out unless a search matched them."""

    @property
    def size(self) -> int:
        """The lines it shows (an elided stretch counts as one line)."""
        hidden = self.elided[1] - self.elided[0] if self.elided else 0
        return self.end - self.start + 1 - hidden


@dataclass(slots=True)
class Hit:
    """One matching line and how much it is worth."""

    path: str
    line: int
    text: str
    score: float = 0.0
    terms: set[str] = field(default_factory=set[str])


@dataclass(slots=True)
class Evidence:
    """What the harness found: the regions read, with their lines, and other matching lines."""

    regions: list[Region] = field(default_factory=list[Region])
    excerpts: list[Excerpt] = field(default_factory=list["Excerpt"])
    other_hits: list[Hit] = field(default_factory=list[Hit])
    definitions: list[Hit] = field(default_factory=list[Hit])
    searched: list[str] = field(default_factory=list[str])

    @property
    def empty(self) -> bool:
        """True when nothing was found."""
        return not self.excerpts and not self.other_hits

    def render(self, *, numbered: bool = True, paths: Callable[[str], bool] | None = None) -> str:
        """The evidence as text for the model: excerpts first, then the other matching lines.

        Args:
            numbered: Put each line's number before it (answers cite them); edits copy lines
                exactly, and numbers in the way make small models copy them too.
            paths: Only the excerpts of files it accepts, and no other matching lines.

        """
        blocks = [
            excerpt.render(numbered=numbered)
            for excerpt in self.excerpts
            if paths is None or paths(excerpt.region.path)
        ]
        if self.definitions and paths is None:
            rows = [f"{hit.path}:{hit.line}: {hit.text.strip()[:160]}" for hit in self.definitions]
            blocks.append("Where names used above are defined:\n" + "\n".join(rows))
        if self.other_hits and paths is None:
            rows = [f"{hit.path}:{hit.line}: {hit.text.strip()[:160]}" for hit in self.other_hits]
            blocks.append("Other matching lines:\n" + "\n".join(rows))
        return "\n\n".join(blocks)


@dataclass(frozen=True, slots=True)
class Excerpt:
    """The lines of one region as ``view`` returned them: ``(number, text)`` pairs.

    Attributes:
        marked: The numbers of the lines that matched a search: numbered when rendered.

    """

    region: Region
    lines: tuple[tuple[int, str], ...]
    marked: frozenset[int] = frozenset()

    @classmethod
    def from_view(cls, region: Region, view_output: str, marked: Iterable[int] = ()) -> Excerpt:
        """Read the numbered lines out of ``view``'s output."""
        rows: list[tuple[int, str]] = []
        for line in view_output.splitlines():
            number, tab, code = line.partition("\t")
            if tab and number.strip().isdigit():
                rows.append((int(number), code))
        return cls(region, tuple(rows), frozenset(marked))

    def render(self, *, numbered: bool = True) -> str:
        """A heading naming the file and lines, then the lines.

        Args:
            numbered: Put its number before the first line and each marked line, for answers to
                cite. Only those: a small model's tokenizer spells a number digit by digit, so
                numbering every line would make a third of the prompt.

        """
        label = f" ({self.region.label})" if self.region.label else ""
        heading = f"{self.region.path} lines {self.region.start}-{self.region.end}{label}:"
        first = self.lines[0][0] if self.lines else 0
        elided = self.region.elided
        body: list[str] = []
        for number, code in self.lines:
            if elided and elided[0] <= number <= elided[1] and number not in self.marked:
                if not body or body[-1] != ELISION:
                    body.append(ELISION)
                continue
            body.append(
                f"{number}: {code}" if numbered and (number == first or number in self.marked) else code
            )
        return heading + "\n" + "\n".join(body)

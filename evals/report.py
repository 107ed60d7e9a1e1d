"""What an eval run reports: one row per task and harness, totals per harness, and the JSON document.

Rows print as they come (:class:`Columns`); the totals print as a plain table and as Markdown (the
README quotes the latter); the JSON document holds the run's setting (machine, model, threads,
nestor's commit), every row with its failures and answer, and the totals.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import statistics
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from evals.tasks import EVALS_DIR, QUESTION_KINDS
from nestor.providers.local.weights import BUNDLED_SHA256, BUNDLED_SIZE, bundled_model_path

_FAILURE_COLUMN_CHARS = 100


@dataclass(frozen=True, slots=True)
class Row:
    """The outcome of one task run by one harness.

    Attributes:
        task_id: The task's id.
        kind: The task's kind (see :data:`evals.tasks.KINDS`).
        harness: The harness's name.
        solved: True when the harness finished without error and every check held.
        seconds: Wall time of the harness's run.
        input_tokens: Prompt tokens the model evaluated, or None when the harness cannot tell.
        output_tokens: Tokens the model generated, or None when the harness cannot tell.
        failures: Why it is not solved: the harness's error first, then each failed check.
        answer: The harness's final answer.
        log: The harness's full output for this run, if it kept one.
        workspace: The workspace, when it was kept (``--keep``).

    """

    task_id: str
    kind: str
    harness: str
    solved: bool
    seconds: float
    input_tokens: int | None
    output_tokens: int | None
    failures: tuple[str, ...]
    answer: str
    log: str | None = None
    workspace: str | None = None


def row_from_dict(data: dict[str, Any]) -> Row:
    """The row a JSON document (:func:`report_document`) or a grades file holds as ``data``."""
    return Row(**{**data, "failures": tuple(data.get("failures") or ())})


@dataclass(frozen=True, slots=True)
class HarnessTotals:
    """One harness's totals over the rows of a run.

    Attributes:
        harness: The harness's name.
        solved: Tasks solved.
        total: Tasks run.
        question_median_s: Median seconds of its question tasks, None if it ran none.
        edit_median_s: Median seconds of its edit tasks, None if it ran none.
        input_tokens: Input tokens over all rows that report them, None if none does.
        output_tokens: Output tokens over all rows that report them, None if none does.

    """

    harness: str
    solved: int
    total: int
    question_median_s: float | None
    edit_median_s: float | None
    input_tokens: int | None
    output_tokens: int | None

    @property
    def percent(self) -> float:
        """Share of tasks solved, in percent (0 when none ran)."""
        return 100.0 * self.solved / self.total if self.total else 0.0


@dataclass(frozen=True, slots=True)
class Columns:
    """The fixed-width layout of the rows printed while a run goes on."""

    task_width: int
    harness_width: int

    @classmethod
    def fitting(cls, task_ids: Sequence[str], harness_names: Sequence[str]) -> Columns:
        """Columns wide enough for every task id and harness name."""
        return cls(max(map(len, ["task", *task_ids])), max(map(len, ["harness", *harness_names])))

    def header(self) -> str:
        """The header line of the rows."""
        return self._line("task", "kind", "harness", "solved", "seconds", "tokens in/out", "first failure")

    def row(self, row: Row) -> str:
        """One row as a line."""
        failure = row.failures[0] if row.failures else ""
        if len(failure) > _FAILURE_COLUMN_CHARS:
            failure = failure[: _FAILURE_COLUMN_CHARS - 3] + "..."
        tokens = f"{_count(row.input_tokens)}/{_count(row.output_tokens)}"
        solved = "yes" if row.solved else "no"
        return self._line(row.task_id, row.kind, row.harness, solved, f"{row.seconds:.1f}", tokens, failure)

    def _line(
        self, task: str, kind: str, harness: str, solved: str, seconds: str, tokens: str, failure: str
    ) -> str:
        cells = [
            task.ljust(self.task_width),
            kind.ljust(8),
            harness.ljust(self.harness_width),
            solved.ljust(6),
            seconds.rjust(7),
            tokens.rjust(15),
            failure,
        ]
        return " | ".join(cells).rstrip()


def summarize(rows: Sequence[Row], harness_names: Sequence[str]) -> list[HarnessTotals]:
    """The totals of each harness in ``harness_names`` (in that order) over ``rows``."""
    return [_totals(name, [row for row in rows if row.harness == name]) for name in harness_names]


def _totals(harness: str, rows: list[Row]) -> HarnessTotals:
    questions = [row.seconds for row in rows if row.kind in QUESTION_KINDS]
    edits = [row.seconds for row in rows if row.kind not in QUESTION_KINDS]
    return HarnessTotals(
        harness=harness,
        solved=sum(row.solved for row in rows),
        total=len(rows),
        question_median_s=statistics.median(questions) if questions else None,
        edit_median_s=statistics.median(edits) if edits else None,
        input_tokens=_sum_known([row.input_tokens for row in rows]),
        output_tokens=_sum_known([row.output_tokens for row in rows]),
    )


def _sum_known(values: list[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


_TOTALS_HEADER = (
    "harness",
    "solved",
    "%",
    "median s (questions)",
    "median s (edits)",
    "tokens in",
    "tokens out",
)


def _totals_cells(totals: HarnessTotals) -> tuple[str, ...]:
    return (
        totals.harness,
        f"{totals.solved}/{totals.total}",
        f"{totals.percent:.0f}%",
        _seconds(totals.question_median_s),
        _seconds(totals.edit_median_s),
        _count(totals.input_tokens),
        _count(totals.output_tokens),
    )


def totals_table(totals: Sequence[HarnessTotals]) -> str:
    """The totals as an aligned plain-text table."""
    lines = [_TOTALS_HEADER, *(_totals_cells(item) for item in totals)]
    widths = [max(len(line[column]) for line in lines) for column in range(len(_TOTALS_HEADER))]
    return "\n".join(
        "  ".join(
            cell.ljust(width) if column == 0 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    )


def totals_markdown(totals: Sequence[HarnessTotals]) -> str:
    """The totals as a Markdown table."""
    lines = [
        "| " + " | ".join(_TOTALS_HEADER) + " |",
        "| --- |" + " ---: |" * (len(_TOTALS_HEADER) - 1),
        *("| " + " | ".join(_totals_cells(item)) + " |" for item in totals),
    ]
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def describe_run(
    *, started: datetime, model_path: Path, threads: int, context_window: int, harness_names: Sequence[str]
) -> dict[str, Any]:
    """The setting of a run, for its JSON document: date, machine, model, threads, nestor's commit."""
    return {
        "date": started.isoformat(timespec="seconds"),
        "machine": describe_machine(),
        "model": describe_model(model_path),
        "threads": threads,
        "context_window": context_window,
        "nestor": describe_nestor_checkout(),
        "harnesses": list(harness_names),
    }


def report_document(
    setting: dict[str, Any], rows: Sequence[Row], *, interrupted: bool = False
) -> dict[str, Any]:
    """The JSON document of a run: its setting (:func:`describe_run`), every row, and the totals."""
    totals = summarize(rows, setting["harnesses"])
    return {
        **setting,
        "interrupted": interrupted,
        "rows": [dataclasses.asdict(row) for row in rows],
        "totals": [dataclasses.asdict(item) | {"percent": round(item.percent, 1)} for item in totals],
        "markdown": totals_markdown(totals),
    }


def earlier_rows(path: Path) -> list[Row]:
    """The rows of the run whose JSON document is at ``path``; none if there is none or it is unreadable."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return [row_from_dict(data) for data in document["rows"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def write_report(path: Path, document: dict[str, Any]) -> None:
    """Write ``document`` to ``path`` as JSON, whole or not at all (a reader never sees half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)


def describe_machine() -> dict[str, Any]:
    """The machine the run measured: CPU, cores, operating system, Python."""
    return {
        "cpu": _cpu_model() or platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "architecture": platform.machine(),
        "system": platform.platform(),
        "python": platform.python_version(),
    }


def _cpu_model() -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return None


def describe_model(model_path: Path) -> dict[str, Any]:
    """The model file's name, size and sha256; the hash is known, never computed, for the bundled file."""
    size = model_path.stat().st_size if model_path.is_file() else None
    is_bundled = model_path.name == bundled_model_path(Path()).name and size == BUNDLED_SIZE
    return {"file": model_path.name, "size": size, "sha256": BUNDLED_SHA256 if is_bundled else None}


def describe_nestor_checkout() -> dict[str, Any]:
    """The git commit of the nestor checkout the eval runs from, and whether it has local changes."""
    root = EVALS_DIR.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}

"""What a results file says: its totals and one row per job, and SWE-bench's predictions format."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nestor.app.batch.results import STATUSES, latest, read_records


@dataclass(frozen=True, slots=True)
class Summary:
    """A batch's results, each job's last record.

    Attributes:
        records: The last record of each job, in the order they were first recorded.
        counts: How many jobs ended with each status.
        tokens: Tokens of every job's agent tree.
        cost_usd: Their cost (None when no request had a price).
        duration_s: The jobs' durations added up.

    """

    records: list[dict[str, Any]]
    counts: dict[str, int]
    tokens: int
    cost_usd: float | None
    duration_s: float


def summarize(records: list[dict[str, Any]]) -> Summary:
    """The summary of a results file's records (a job run again counts once, by its last record)."""
    last = list(latest(records).values())
    counts = Counter(str(record.get("status", "error")) for record in last)
    costs = [record["cost_usd"] for record in last if isinstance(record.get("cost_usd"), (int, float))]
    return Summary(
        records=last,
        counts={status: counts.get(status, 0) for status in STATUSES},
        tokens=sum(int(record.get("tokens") or 0) for record in last),
        cost_usd=sum(costs) if costs else None,
        duration_s=sum(float(record.get("duration_s") or 0.0) for record in last),
    )


def read_summary(path: Path) -> Summary:
    """The summary of the results file at ``path``.

    Raises:
        NestorError: The file cannot be read.

    """
    return summarize(read_records(path))


def predictions(summary: Summary, model_name: str) -> list[dict[str, Any]]:
    """SWE-bench's predictions: ``instance_id``, ``model_name_or_path``, ``model_patch`` per job.

    Every job with a result is included (an empty patch where it changed nothing), as SWE-bench's
    harness counts a missing instance as unresolved either way.
    """
    return [
        {
            "instance_id": record["id"],
            "model_name_or_path": record.get("model") or model_name,
            "model_patch": record.get("patch") or "",
        }
        for record in summary.records
    ]


def write_predictions(summary: Summary, path: Path, model_name: str = "nestor") -> int:
    """Write :func:`predictions` to ``path`` as JSON Lines (``.jsonl``) or one JSON list; return the count."""
    rows = predictions(summary, model_name)
    if path.suffix == ".jsonl":
        text = "".join(json.dumps(row) + "\n" for row in rows)
    else:
        text = json.dumps(rows, indent=2) + "\n"
    path.write_text(text, encoding="utf-8")
    return len(rows)

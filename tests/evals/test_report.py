"""The JSON documents of eval runs: the ones kept in ``evals/runs`` (which the README quotes) still
load as rows, and their totals computed again are the Markdown they hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.report import row_from_dict, summarize, totals_markdown

RUNS = sorted((Path(__file__).parents[2] / "evals" / "runs").glob("*.json"))


@pytest.mark.parametrize("path", RUNS, ids=[path.name for path in RUNS])
def test_a_kept_run_loads_and_its_totals_are_its_markdown(path: Path) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    rows = [row_from_dict(row) for row in document["rows"]]
    assert rows and totals_markdown(summarize(rows, document["harnesses"])) == document["markdown"]


def test_the_runs_are_there() -> None:
    assert len(RUNS) >= 10

"""Run every benchmark and print its figures: ``make bench`` (or ``python bench/run.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import acp_startup
import agent_files
import batch
import checkpoints
import compaction
import context_isolation
import fanout
import grep
import hard_links
import html_conversion
import local_model
import loop_overhead
import openai_request
import pool_memory
import sandbox
import session_load
import startup
import startup_peers
import tui


def main() -> None:
    """Run the benchmarks one after the other."""
    loop_overhead.main()
    print()
    startup.main()
    print()
    startup_peers.main()
    print()
    acp_startup.main()
    agent_files.main()
    print()
    compaction.main()
    print()
    local_model.main()
    print()
    fanout.main()
    print()
    openai_request.main()
    print()
    pool_memory.main()
    print()
    context_isolation.main()
    print()
    html_conversion.main()
    print()
    grep.main()
    print()
    hard_links.main()
    print()
    sandbox.main()
    print()
    checkpoints.main()
    print()
    session_load.main()
    print()
    tui.main()
    print()
    batch.main()


if __name__ == "__main__":
    main()

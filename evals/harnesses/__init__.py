"""The harnesses an eval runs tasks through: nestor itself and peer coding agents.

:data:`HARNESSES` maps each harness's name (as ``--harness`` takes it) to the class that drives it;
a harness's module is imported only when it is used, so a missing peer breaks only its own runs.
"""

from __future__ import annotations

import importlib

from evals.harnesses.base import BatchHarness, Harness

HARNESSES: dict[str, str] = {
    "nestor": "evals.harnesses.nestor:NestorHarness",
    "aider": "evals.harnesses.aider:AiderHarness",
    "mini-swe-agent": "evals.harnesses.mini_swe_agent:MiniSweAgentHarness",
    "opencode": "evals.harnesses.opencode:OpenCodeHarness",
}
"""Harness name -> ``module:Class``; the class is constructible with no arguments."""


class HarnessUnavailableError(RuntimeError):
    """A harness name that is unknown, or whose class cannot be imported."""


def create_harness(name: str) -> Harness | BatchHarness:
    """Return a new harness of the given name, built with its defaults.

    Raises:
        HarnessUnavailableError: ``name`` is not in :data:`HARNESSES`, or its module or class is missing.

    """
    target = HARNESSES.get(name)
    if target is None:
        raise HarnessUnavailableError(f"unknown harness {name!r}; known: {', '.join(HARNESSES)}")
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
        harness_class = getattr(module, class_name)
    except (ImportError, AttributeError) as error:
        raise HarnessUnavailableError(f"harness {name!r} is not available: {error}") from None
    return harness_class()

"""Context isolation: what the main agent sends when it explores itself vs through ``explore``.

A generated project of 40 Python modules (2-4 KB each, 8 packages) is explored by one fixed plan
of 30 calls to nestor's real ``glob``, ``grep`` and ``view`` tools, in 10 responses of 3 parallel
calls, followed by a short report. Side by side, in one run, on real SQLite:

- (a) the main agent runs the plan itself, then answers: every later request carries every
  earlier tool result;
- (b) the main agent makes one ``task`` call to the built-in ``explore`` agent, which runs the
  same plan on its own model (the ``small`` role) and session and returns its report; the main
  agent answers from the report.

The main agent is set up as the app sets up the coder: the built-in ``coder`` prompt with the real
``<environment>`` section, the coder's tools plus the ``task`` tools (``todo_write`` left out).

Token counts are nestor's own estimate (``nestor.runtime.kernel.context``: four characters per token,
plus a small overhead per message), which the scripted models report as each request's usage:
the instructions and tool definitions sent with the request plus every message in it. The main
agent's input tokens are summed over the responses stored in the main session only; the explore
agent's own requests are shown apart (they are paid for too, on the small model).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tempfile
from dataclasses import dataclass
from functools import reduce
from operator import add
from pathlib import Path
from random import Random
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.usage import RequestUsage

from nestor.config.sections import AgentsConfig
from nestor.core.events import Event, ToolFinished
from nestor.core.tokens import estimate_tokens
from nestor.runtime.factory.prompt import build_system_prompt, builtin_agent_prompt
from nestor.runtime.factory.toolset import coder_tools
from nestor.runtime.kernel.context import fixed_tokens, messages_tokens
from nestor.testing import ScriptedModel, Step, call, reply
from subagents import BenchTree, conversation_model, responses_so_far

TARGET = 10.0
PACKAGES = ("orders", "billing", "catalog", "shipping", "customers", "api", "storage", "reports")
MODULES = ("models", "service", "rules", "repository", "views")
NOUNS = ("order", "invoice", "customer", "cart", "payment", "refund", "discount", "shipment", "price", "tax")
VERBS = ("load", "save", "apply", "compute", "validate", "find", "cancel", "merge", "split", "render")
FIELDS = ("amount", "currency", "status", "created_at", "customer_id", "reference", "rate", "quantity")

QUESTION = "How is a refund computed, and where is a discount applied to an order?"
TASK_PROMPT = (
    "Find how refunds are computed and where discounts are applied to orders in src/shop. Look at "
    "the billing and orders packages first, follow the calls into rules and service modules, and "
    "report the functions involved with path:line for each, in a few lines."
)
REPORT = (
    "Refunds: src/shop/billing/service.py computes them (compute_refund and apply_refund), using "
    "the rate rules of src/shop/billing/rules.py; the amounts are rounded to cents and checked "
    "against the invoice total in src/shop/billing/models.py. Discounts: apply_discount in "
    "src/shop/orders/rules.py, called from src/shop/orders/service.py when an order is saved, and "
    "again from src/shop/catalog/rules.py for catalog prices. Nothing else writes discount amounts; "
    "src/shop/api/views.py only renders them."
)
ANSWER = (
    "A refund is computed in src/shop/billing/service.py from the invoice's amounts and the rates in "
    "src/shop/billing/rules.py, rounded to cents. Discounts are applied by apply_discount in "
    "src/shop/orders/rules.py when an order is saved (src/shop/orders/service.py), and to catalog "
    "prices in src/shop/catalog/rules.py."
)


def module_path(package: str, module: str) -> str:
    """Where a generated module lives, relative to the project root."""
    return f"src/shop/{package}/{module}.py"


def source_file(package: str, module: str) -> str:
    """A deterministic, plausible Python module of 2 to 4 KB."""
    rng = Random(f"{package}/{module}")
    noun = rng.choice(NOUNS)
    cls = f"{noun.title()}{module.title()}"
    lines = [
        f'"""The {package} {module}: {", ".join(rng.sample(NOUNS, 4))} handling."""',
        "",
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass, replace",
        "from decimal import Decimal",
        "",
        f"from shop.{rng.choice(PACKAGES)}.models import {rng.choice(NOUNS).title()}",
        "",
        f"MAX_{noun.upper()}S = {rng.randrange(10, 500)}",
        "",
        "",
        "@dataclass(frozen=True)",
        f"class {cls}:",
        f'    """One {noun} as the {package} package sees it."""',
        "",
        *[f"    {field}: {rng.choice(('str', 'int', 'Decimal'))}" for field in rng.sample(FIELDS, 5)],
        "",
    ]
    target = rng.randrange(2_000, 4_000)
    while sum(len(line) + 1 for line in lines) < target:
        verb, other, field = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(FIELDS)
        lines += [
            f"    def {verb}_{other}(",
            f"        self, {other}: {other.title()}, *, limit: int = {rng.randrange(1, 50)}",
            f"    ) -> list[{other.title()}]:",
            f'        """{verb.title()} the {other}s of this {noun} (at most ``limit``)."""',
            f"        found = [entry for entry in self.{other}s if entry.{field} == {other}.{field}]",
            "        if not found:",
            f'            raise LookupError(f"no {other} for {{{other}!r}}")',
            "        if not sum(Decimal(entry.amount) for entry in found[:limit]):",
            "            return found",
            "        return [replace(entry, amount=round(entry.amount * self.rate, 2)) for entry in found]",
            "",
        ]
    return "\n".join(lines) + "\n"


def write_project(project: Path) -> int:
    """Write the 40 modules; return their total size in bytes."""
    size = 0
    for package in PACKAGES:
        for module in MODULES:
            path = project / module_path(package, module)
            path.parent.mkdir(parents=True, exist_ok=True)
            text = source_file(package, module)
            path.write_text(text, encoding="utf-8")
            size += len(text.encode())
    return size


def exploration() -> list[list[tuple[str, dict[str, Any]]]]:
    """The plan: 10 responses of 3 parallel calls (2 globs, 7 greps, 21 views)."""
    views = [
        module_path(package, module)
        for package, module in (
            ("billing", "service"), ("billing", "rules"), ("billing", "models"),
            ("orders", "rules"), ("orders", "service"), ("orders", "models"),
            ("catalog", "rules"), ("catalog", "service"), ("api", "views"),
            ("billing", "repository"), ("orders", "repository"), ("customers", "models"),
            ("shipping", "rules"), ("reports", "service"), ("storage", "repository"),
            ("api", "service"), ("billing", "views"), ("orders", "views"),
            ("catalog", "models"), ("customers", "service"), ("reports", "rules"),
        )
    ]  # fmt: skip
    view = [("view", {"path": path}) for path in views]
    return [
        [("glob", {"pattern": "src/**/*.py"}), ("grep", {"pattern": "def apply_discount"}), view[0]],
        [("grep", {"pattern": "def compute_refund"}), view[1], view[2]],
        [view[3], view[4], view[5]],
        [("grep", {"pattern": "class .*Rules"}), view[6], view[7]],
        [view[8], view[9], view[10]],
        [("grep", {"pattern": "def cancel_refund", "path": "src/shop/billing"}), view[11], view[12]],
        [view[13], view[14], view[15]],
        [("glob", {"pattern": "*rules.py"}), ("grep", {"pattern": "MAX_REFUNDS"}), view[16]],
        [view[17], view[18], view[19]],
        [("grep", {"pattern": "def apply_tax"}), ("grep", {"pattern": "refund"}), view[20]],
    ]


def _usage(messages: list[ModelMessage], info: AgentInfo, output: str) -> RequestUsage:
    """What was sent, by nestor's estimate: instructions, tool definitions and every message."""
    sent = fixed_tokens(info.instructions or "", info.function_tools) + messages_tokens(messages)
    return RequestUsage(input_tokens=sent, output_tokens=estimate_tokens(output))


def _calls(batch: list[tuple[str, dict[str, Any]]]) -> Step:
    return reduce(add, [call(name, args) for name, args in batch])


def explorer_model(final: str, name: str) -> ScriptedModel:
    """Runs the exploration plan, then answers ``final``."""
    plan = exploration()

    def decide(messages: list[ModelMessage], info: AgentInfo) -> Step:
        done = responses_so_far(messages)
        step = _calls(plan[done]) if done < len(plan) else reply(final)
        output = step.text + "".join(json.dumps(c.args) for c in step.calls)
        return dataclasses.replace(step, usage=_usage(messages, info, output))

    return conversation_model(decide, name)


def delegating_model() -> ScriptedModel:
    """Hands the exploration to ``explore`` in one ``task`` call, then answers from its report."""

    def decide(messages: list[ModelMessage], info: AgentInfo) -> Step:
        if responses_so_far(messages):
            return reply(ANSWER, usage=_usage(messages, info, ANSWER))
        args = {
            "description": "find refunds and discounts",
            "prompt": TASK_PROMPT,
            "subagent_type": "explore",
        }
        return call("task", args, usage=_usage(messages, info, json.dumps(args)))

    return conversation_model(decide, "bench-main-delegating")


@dataclass
class SessionTokens:
    """The input tokens of one session's own requests, as its stored responses report them."""

    requests: int
    input_tokens: int
    largest: int


def session_tokens(bench: BenchTree, session_id: str) -> SessionTokens:
    """Sum the usage of the responses stored in ``session_id`` (not its children's)."""
    inputs = [
        message.usage.input_tokens
        for message in bench.messages.list(session_id)
        if isinstance(message, ModelResponse)
    ]
    return SessionTokens(len(inputs), sum(inputs), max(inputs, default=0))


@dataclass
class IsolationFigures:
    """Both ways, side by side."""

    project_bytes: int
    tool_calls: int
    own: SessionTokens
    delegated: SessionTokens
    explorer: SessionTokens


async def run_case(
    root: Path, label: str, *, delegate: bool
) -> tuple[SessionTokens, SessionTokens | None, int]:
    """One main-agent run; return the main session's tokens, the explorer's, and the successful tool calls."""
    project = root / "project"
    main_model = delegating_model() if delegate else explorer_model(ANSWER, "bench-main-exploring")
    small = explorer_model(REPORT, "bench-explore")
    bench = BenchTree(project, root / label, config=AgentsConfig(), models={"small": small})
    finished: list[ToolFinished] = []

    def record(event: Event) -> None:
        if isinstance(event, ToolFinished) and event.outcome == "success" and event.tool_name != "task":
            finished.append(event)

    bench.bus.subscribe(record)
    prompt = await build_system_prompt(
        builtin_agent_prompt("coder"), project, user_config_dir=bench.data / "home" / ".config" / "nestor"
    )
    main = bench.main(main_model, [tool.name for tool in coder_tools()], system_prompt=prompt)
    result = await main.run(QUESTION)
    assert result.stop_reason == "completed" and result.text == ANSWER, result
    own = session_tokens(bench, main.session_id)
    children = bench.sessions.children(main.session_id)
    explorer = session_tokens(bench, children[0].id) if children else None
    if delegate:
        assert [child.agent_name for child in children] == ["explore"], children
        assert any(
            isinstance(p, ToolCallPart) and p.tool_name == "task" for m in main.history for p in m.parts
        )
    bench.close()
    return own, explorer, len(finished)


async def measure() -> IsolationFigures:
    """Run (a) and (b) over the same generated project."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        size = write_project(root / "project")
        own, _, calls_a = await run_case(root, "own", delegate=False)
        delegated, explorer, calls_b = await run_case(root, "delegated", delegate=True)
    planned = sum(len(batch) for batch in exploration())
    assert calls_a == calls_b == planned, (calls_a, calls_b, planned)
    assert explorer is not None
    return IsolationFigures(size, planned, own, delegated, explorer)


def main() -> IsolationFigures:
    """Print the figures and return them."""
    figures = asyncio.run(measure())
    own, delegated, explorer = figures.own, figures.delegated, figures.explorer
    ratio = own.input_tokens / delegated.input_tokens
    verdict = "PASS" if ratio >= TARGET else "FAIL"
    print(
        f"Context isolation: {figures.tool_calls} glob/grep/view calls over 40 modules "
        f"({figures.project_bytes / 1024:.0f} KB), done by the main agent vs through explore"
    )
    print("  (input tokens: nestor's estimate of each request, summed over the main session's own responses)")
    print(f"  {'':34}{'requests':>9}{'input tokens':>14}{'largest request':>17}")
    print(
        f"  {'(a) main agent explores itself':34}{own.requests:>9}{own.input_tokens:>14,}{own.largest:>17,}"
    )
    print(
        f"  {'(b) main agent delegates':34}{delegated.requests:>9}"
        f"{delegated.input_tokens:>14,}{delegated.largest:>17,}"
    )
    print(
        f"  {'    the explore agent itself':34}{explorer.requests:>9}"
        f"{explorer.input_tokens:>14,}{explorer.largest:>17,}"
    )
    print(f"  main agent's input tokens (a) / (b): {ratio:.1f}x   target >= {TARGET:.0f}x  {verdict}")
    return figures


if __name__ == "__main__":
    main()

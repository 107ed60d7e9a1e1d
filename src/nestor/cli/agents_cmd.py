"""``nestor agents list|show|validate|create|delete``: the agent definitions nestor reads, and new ones.

Every command reads the agent files through the agent registry, so what it shows is exactly what
the task tool will find: the effective definition of each name, the definitions it shadows, and
every problem with its file, line and key. ``create`` writes ``.nestor/agents/NAME.md`` only after
reading the new file back with the same readers, so a file it writes always loads.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nestor.cli.agents_output import (
    display,
    format_problem,
    path_or_none,
    print_table,
    problem_to_dict,
    spec_row,
    spec_summary,
    spec_to_dict,
    value_text,
)

if TYPE_CHECKING:
    from nestor.app.agent_files import AgentRegistry, AgentSpec
    from nestor.cli.options import CommonOptions

app = typer.Typer(help="List, show, check, create and delete agent definitions.", no_args_is_help=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
NameArgument = Annotated[str, typer.Argument(help="The agent's name.")]


def _options(ctx: typer.Context) -> CommonOptions:
    from nestor.cli.options import CommonOptions

    return ctx.obj if isinstance(ctx.obj, CommonOptions) else CommonOptions()


def _registry(ctx: typer.Context) -> AgentRegistry:
    """The project's agent registry, as the app builds it.

    Not through :class:`~nestor.app.App`: importing it costs seconds (pydantic-ai), and listing
    agent files needs neither the database nor a model.
    """
    from nestor.app.agent_files import project_registry

    options = _options(ctx)
    return project_registry(options.project_root, os.environ, trusted=options.project_trusted())


@app.command("list")
def list_agents(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List every agent: built-in, the user's and the project's, then the problems of their files."""
    registry = _registry(ctx)
    specs, shadowed, problems = registry.specs(), registry.shadowed(), registry.problems()
    if as_json:
        winners = {spec.name: spec for spec in specs}
        document = {
            "agents": [spec_summary(spec) for spec in specs],
            "shadowed": [
                spec_summary(spec) | {"shadowed_by": path_or_none(winners[spec.name].path)}
                for spec in shadowed
            ],
            "problems": [problem_to_dict(problem) for problem in problems],
        }
        print(json.dumps(document, indent=2))
        return
    columns = ("name", "source", "format", "mode", "model", "tools", "description")
    rows = [spec_row(spec, shadowed=False) for spec in specs] + [
        spec_row(spec, shadowed=True) for spec in shadowed
    ]
    print_table(columns, rows)
    if problems:
        print()
        print("problems:")
        for problem in problems:
            print(format_problem(problem))


@app.command("show")
def show_agent(ctx: typer.Context, name: NameArgument, as_json: JsonOption = False) -> None:
    """Show one agent: every field, its file, what it shadows, and its prompt."""
    registry = _registry(ctx)
    spec = registry.get(name)
    hidden = [other for other in registry.shadowed() if other.name == spec.name]
    problems = [problem for problem in registry.problems() if spec.path and problem.path == spec.path]
    if as_json:
        document = spec_to_dict(spec) | {
            "shadows": [spec_summary(other) for other in hidden],
            "problems": [problem_to_dict(problem) for problem in problems],
        }
        print(json.dumps(document, indent=2))
        return
    data = spec_to_dict(spec)
    prompt = data.pop("prompt")
    for key, value in data.items():
        print(f"{key}: {value_text(key, value)}")
    for other in hidden:
        print(f"shadows: {display(other.path)} ({other.source}, {other.ecosystem} format)")
    for problem in problems:
        print(format_problem(problem))
    print()
    print("prompt:")
    print(prompt or "(none)")


@app.command("validate")
def validate_agents(
    ctx: typer.Context,
    as_json: JsonOption = False,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Rewrite the agent files whose YAML nestor had to repair (an unquoted ': ' in a value, "
            "continuation lines not indented), each repaired value as a block scalar.",
        ),
    ] = False,
) -> None:
    """Read every agent file and report its problems; exit 1 when any is an error."""
    from nestor.app.agent_files import fix_agent_files
    from nestor.app.agent_models import agent_model_problems
    from nestor.cli.formatting import counted

    registry = _registry(ctx)
    fixed = fix_agent_files(registry) if fix else []
    models = agent_model_problems(
        registry.specs() + registry.shadowed(), _options(ctx).load_settings(), os.environ
    )
    problems = sorted([*registry.problems(), *models], key=lambda problem: (str(problem.path), problem.line))
    files_ok = sum(1 for spec in registry.specs() + registry.shadowed() if spec.source != "builtin")
    errors = sum(1 for problem in problems if problem.severity == "error")
    warnings = len(problems) - errors
    if as_json:
        document = {
            "ok": errors == 0,
            "files_ok": files_ok,
            "errors": errors,
            "warnings": warnings,
            "problems": [problem_to_dict(problem) for problem in problems],
        }
        if fix:
            document["fixed"] = [{"path": str(path), "outcome": outcome} for path, outcome in fixed]
        print(json.dumps(document, indent=2))
    else:
        for path, outcome in fixed:
            print(f"{display(path)}: {outcome}")
        for problem in problems:
            print(format_problem(problem))
        if errors:
            print(f"{counted(errors, 'error')}, {counted(warnings, 'warning')} in the agent files")
        else:
            print(f"{counted(files_ok, 'agent file')} OK ({counted(warnings, 'warning')})")
    if errors:
        raise typer.Exit(1)


@app.command("create")
def create_agent(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="The agent's name (asked when omitted).")] = None,
    description: Annotated[
        str | None, typer.Option(help="When the main agent should use it (asked when omitted).")
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(help="Comma-separated tool names; empty for every tool (asked when omitted)."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="The new agent's own model (large, small, provider:model); empty inherits the parent's. "
            "Not the model that drafts it (--draft-model)."
        ),
    ] = None,
    prompt: Annotated[str | None, typer.Option(help="Its system prompt (asked when omitted).")] = None,
    from_description: Annotated[
        str | None,
        typer.Option("--from-description", help="Let a model draft the whole agent from this text."),
    ] = None,
    draft_model: Annotated[
        str | None,
        typer.Option(
            "--draft-model",
            help="The model that drafts it with --from-description, as provider:model "
            "(default: the configured large model).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing agent file.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Write a drafted agent without asking.")] = False,
) -> None:
    """Create a project agent in .nestor/agents/NAME.md, asking for each field or drafting it with a model."""
    from nestor.app.agent_files import check_name, compose, draft_agent, with_overrides

    registry = _registry(ctx)
    if name is None and from_description is None:
        name = _ask("Name")
    if name is not None:
        check_name(name)
        _check_target(registry, name, force=force)
    given = {"name": name, "description": description, "tools": tools, "model": model}
    if from_description is None:
        text = compose(_ask_fields(given), prompt if prompt is not None else _ask("System prompt"))
    else:
        drafter = _options(ctx) if draft_model is None else replace(_options(ctx), model=draft_model)
        drafted = draft_agent(drafter.load_settings(), from_description, name, notify=_to_stderr)
        text = with_overrides(drafted, given, prompt)
    spec = _read_new_agent(registry, text, name)
    _check_model(ctx, spec, text)
    _check_target(registry, spec.name, force=force)
    _write_agent(registry, spec, confirm=from_description is not None and not yes)


@app.command("delete")
def delete_agent(
    ctx: typer.Context,
    name: NameArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete the project or user agent file that defines NAME (built-in agents cannot be deleted)."""
    from nestor.core.errors import NestorError, UnknownAgentError

    registry = _registry(ctx)
    spec = registry.get(name)
    if spec.name != name:
        raise UnknownAgentError(f"no agent is named {name!r}", hint=f"did you mean {spec.name!r}?")
    if spec.source == "builtin" or spec.path is None:
        raise NestorError(
            f"{spec.name!r} is a built-in agent and cannot be deleted",
            hint=f"to change it, define your own: nestor agents create {spec.name} (it takes precedence)",
        )
    path = spec.path
    if not yes:
        if not sys.stdin.isatty():
            raise NestorError(
                f"refusing to delete {path} without confirmation", hint="add --yes to delete it"
            )
        if not typer.confirm(f"Delete {display(path)} ({spec.source} agent {spec.name!r})?"):
            raise typer.Exit(1)
    path.unlink()
    print(f"deleted {display(path)}")
    now = next((other for other in registry.specs() if other.name == spec.name), None)
    if now is not None:
        print(f"{spec.name!r} is now defined by {display(now.path)} ({now.source}, {now.ecosystem} format)")


def _check_target(registry: AgentRegistry, name: str, *, force: bool) -> None:
    from nestor.core.errors import NestorError

    target = registry.project_agents_dir() / f"{name}.md"
    if target.exists() and not force:
        raise NestorError(
            f"{display(target)} already exists", hint="add --force to overwrite it, or choose another name"
        )


def _ask(text: str, *, optional: bool = False) -> str:
    if optional:
        return str(typer.prompt(text, default="", show_default=False)).strip()
    return str(typer.prompt(text)).strip()


def _ask_fields(given: dict[str, str | None]) -> dict[str, Any]:
    """The front matter of a new agent: the values given as options, the others asked for."""
    description = given["description"]
    if description is None:
        description = _ask("Description (when should the main agent use it?)")
    tools = given["tools"]
    if tools is None:
        tools = _ask("Tools (comma-separated, empty for all)", optional=True)
    model = given["model"]
    if model is None:
        model = _ask("Model (empty to inherit the parent's)", optional=True)
    from nestor.app.agent_files import set_fields

    return set_fields({"name": given["name"]}, {"description": description, "tools": tools, "model": model})


def _read_new_agent(registry: AgentRegistry, text: str, name: str | None) -> AgentSpec:
    """Read a new agent's text as its file would be read; print its problems; fail on an error."""
    from nestor.app.agent_files import drafted_name, read_new_agent
    from nestor.core.errors import NestorError

    if name is None:
        name = drafted_name(text)
        if name is None:
            print(text, file=sys.stderr)
            raise NestorError(
                "the drafted agent has no name, so nothing was written",
                hint='give it one: nestor agents create NAME --from-description "..."',
            )
    result = read_new_agent(registry, text, name)
    for problem in result.problems:
        print(format_problem(problem), file=sys.stderr)
    if result.spec is None or any(repair.kind == "ignored" for repair in result.repairs):
        print(text, file=sys.stderr)
        raise NestorError(
            "the new agent has errors (shown above), so nothing was written",
            hint="fix the values and run nestor agents create again",
        )
    return result.spec


def _check_model(ctx: typer.Context, spec: AgentSpec, text: str) -> None:
    """Print what is wrong with the new agent's model; refuse a model that cannot run at all."""
    from nestor.app.agent_models import new_agent_model_problem
    from nestor.core.errors import NestorError

    problem = new_agent_model_problem(spec, text, _options(ctx).load_settings(), os.environ)
    if problem is None:
        return
    print(format_problem(problem), file=sys.stderr)
    if problem.severity == "error":
        raise NestorError(
            f"the new agent's model {spec.model!r} cannot run, so nothing was written",
            hint="pass --model with a role (large, small), inherit, or provider:model of a known provider",
        )


def _write_agent(registry: AgentRegistry, spec: AgentSpec, *, confirm: bool) -> None:
    from nestor.app.agent_files import render_spec_markdown

    text = render_spec_markdown(spec)
    target = registry.project_agents_dir() / f"{spec.name}.md"
    print(text)
    if confirm and not typer.confirm(f"Write {display(target)}?", default=True):
        print("not written", file=sys.stderr)
        raise typer.Exit(1)
    previous = next((other for other in registry.specs() if other.name == spec.name), None)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"created {display(target)}")
    if previous is not None and previous.path != target:
        print(
            f"it takes precedence over the {previous.source} agent {spec.name!r} ({display(previous.path)})"
        )


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr)

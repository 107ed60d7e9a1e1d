"""Asked whether the tests pass: nestor runs them and says what they said.

"Run the tests", "do the tests pass?", "which tests fail?" have an answer no model should guess:
the project's test command (:mod:`..verifying.test_command`) is run, and the answer is its
verdict, the tests it says failed, and the lines that say why.
"""

from __future__ import annotations

from nestor.runtime.features.small.verifying.test_command import runnable_test_command
from nestor.runtime.features.small.verifying.verdict import failing_tests
from nestor.runtime.features.small.workspace import TAIL_SEPARATOR, Workspace, trim_lines

MAX_NAMED = 10
SHOWN_LINES = 25


async def tests_answer(work: Workspace) -> str | None:
    """The tests' verdict, run now; None when the project has no test command nestor can run."""
    command = runnable_test_command(work.reader, every_failure=True)
    if command is None:
        return None
    failure = await work.run_tests(command)
    if failure is None:
        return f"The tests pass (`{command}`)."
    if (missing := work.missing_runners.get(command)) is not None:
        return f"The tests could not run here (`{command}`: {missing})."
    failed = sorted(failing_tests(failure))
    lines = [f"The tests fail (`{command}`)" + (f": {len(failed)} failed." if failed else ".")]
    lines += [f"- `{name}`" for name in failed[:MAX_NAMED]]
    if len(failed) > MAX_NAMED:
        lines.append(f"- and {len(failed) - MAX_NAMED} more")
    said = failure.replace(TAIL_SEPARATOR, "")
    lines.append(f"\nWhat they printed (the last lines):\n```\n{trim_lines(said, SHOWN_LINES)}\n```")
    return "\n".join(lines)

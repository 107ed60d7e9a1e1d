"""An error as the user sees it: ``error: <cause>`` and ``hint: <what to do>`` on stderr, and an exit code.

Shared by the console script (``entry.py``) and the REPL; it imports nothing heavy, as ``entry.py``
imports it before the command-line app.
"""

from __future__ import annotations

import sys

EXIT_ERROR = 1


def report_error(exc: BaseException, *, debug: bool) -> int:
    """Print ``exc`` as ``error:``/``hint:`` lines (with the traceback under ``--debug``)."""
    from nestor.core.errors import NestorError

    if debug:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, NestorError):
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    else:
        print(f"error: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
        if not debug:
            print("hint: rerun with --debug for the traceback, and report it", file=sys.stderr)
    return EXIT_ERROR

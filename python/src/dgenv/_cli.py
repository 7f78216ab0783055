"""How every ``python -m dgenv.<tool>`` ends: its exit code, and a reader that went away.

A table piped into ``head`` or ``less`` closes the pipe before the tool has
written everything. Python then raises ``BrokenPipeError`` from the next
write (or from the flush at exit) and prints a traceback for what is not an
error. :func:`run` ends the tool quietly instead, as Python's documentation
recommends (the ``signal`` module, "Note on SIGPIPE").
"""

from __future__ import annotations

import os
import sys
from typing import Callable, NoReturn, Optional


def run(main: Callable[[], Optional[int]]) -> NoReturn:
    """Exit with ``main()``'s code; exit 1 without a traceback if stdout's reader has gone."""
    try:
        try:
            code = main()
        finally:
            sys.stdout.flush()  # here, not at the interpreter's exit, where the error cannot be caught
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null so that flush has nowhere to fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    sys.exit(code)

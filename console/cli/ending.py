"""How a read command's process ends: its answer flushed, then at once, without the
interpreter's teardown.

Tearing the interpreter down after `lag` (its final collection, then every module's dict and
every object the read built, freed one by one) took ~17 ms of its ~137 ms (121 ms without
it), and `import console.cli.browse` alone was 119 ms to exit normally against 99 ms with
`os._exit`: medians of 15 beside a running sandbox. Nothing a read leaves needs that teardown:
it writes no file, starts no child process and registers no atexit hook; its connections are
closed and its event loop's threads joined before the handler returns.

Only `console.cli.run` (the program's entry) ends this way, and only for a command that asks
(`ANSWERS_ONCE` in its defaults). `console.cli.main` returns as before, for the tests that call
it in-process.
"""

from __future__ import annotations

import os
import sys

#: The argparse default a command sets to end its process without teardown.
ANSWERS_ONCE = "answers_once"


def end_now(code: int) -> None:
    """Flush stdout and stderr and leave with `code`, skipping the interpreter's teardown.

    Returns (and the caller exits as usual) only when a stream cannot be flushed: a reader that
    closed the pipe early (`lag --json | head`) then gets the interpreter's own handling."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        return
    os._exit(code)

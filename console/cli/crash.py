"""What the command line does with an exception nobody expected: a bug, not bad input.

The operator gets one line saying so and where the full traceback was written (a file of its own
under the cache directory's crashes/, readable by its owner only); `--debug` or
`RMQ_CONSOLE_DEBUG=1` prints the traceback instead. Both pass through `redact_text`, so a secret
this process resolved never lands in the file or on the terminal.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

from console import __version__
from console.locations import crash_dir
from console.redact import redact_text

DEBUG_ENV = "RMQ_CONSOLE_DEBUG"
#: sysexits.h EX_SOFTWARE: the console failed, which is neither bad input (2) nor a partial
#: answer (1); a script can tell "fix the input" from "report this", and a bug part-way through
#: an apply cannot promise what exit 2 promises (refused, nothing written).
EXIT_BUG = 70


def debugging(flag: bool, environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return flag or env.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def report_bug(exc: BaseException, argv: Sequence[str] | None, *, debug: bool) -> int:
    """Tell the operator a bug stopped the command (one line), with the traceback written to a
    file, or printed when debugging; returns EXIT_BUG."""
    where = f"{type(exc).__name__} in rmq-console {__version__}"
    text = redact_text("".join(traceback.format_exception(exc)))
    if debug:
        sys.stderr.write(text)
        print(redact_text(f"rmq-console: bug: {where}: {exc}"), file=sys.stderr)
        return EXIT_BUG
    try:
        path = _write_report(text, argv)
    except OSError as failed:
        print(
            redact_text(
                f"rmq-console: bug: {where}: {exc} (the traceback could not be written: "
                f"{failed.strerror or failed}; run with --debug to see it)"
            ),
            file=sys.stderr,
        )
        return EXIT_BUG
    print(
        redact_text(f"rmq-console: bug: {where}: {exc}; the traceback is in {path}"),
        file=sys.stderr,
    )
    return EXIT_BUG


def _write_report(text: str, argv: Sequence[str] | None) -> Path:
    folder = crash_dir()
    folder.mkdir(parents=True, exist_ok=True)
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now * 1000) % 1000:03d}Z"
    path = folder / f"{stamp}-{os.getpid()}.txt"
    args = list(sys.argv[1:] if argv is None else argv)
    head = (
        f"rmq-console {__version__}, Python {platform.python_version()} on {platform.platform()}\n"
        f"command: rmq-console {' '.join(args)}\n\n"
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(redact_text(head) + text)
    return path

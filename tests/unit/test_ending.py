"""A read command's process ends once its answer is flushed, with its exit code, whatever the
size of the answer; a reader that closed the pipe early gets the interpreter's own handling."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CONSOLE = str(Path(sys.executable).with_name("rmq-console"))


def _python(code: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE} | kwargs
    return subprocess.run([sys.executable, "-c", code], timeout=60, **streams)  # type: ignore[call-overload, no-any-return]


def test_everything_written_reaches_the_reader_before_the_process_ends() -> None:
    done = _python(
        "import sys\n"
        "from console.cli.ending import end_now\n"
        "sys.stdout.write('x' * 3_000_000)\n"
        "print('on stderr', file=sys.stderr)\n"
        "end_now(3)\n"
        "raise SystemExit('end_now returned')\n"
    )
    assert done.returncode == 3, done.stderr
    assert len(done.stdout) == 3_000_000
    assert done.stderr == b"on stderr\n"


def test_a_closed_pipe_falls_back_to_the_normal_exit() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written (`| head` done)
    try:
        # A short answer waits in stdout's buffer (so not unbuffered, whatever the environment
        # says): the flush meets the closed pipe.
        buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        done = _python(
            "import sys\n"
            "from console.cli.ending import end_now\n"
            "print('a short answer')\n"
            "end_now(0)\n"
            "print('returned', file=sys.stderr)\n",
            stdout=write_end,
            env=buffered,
        )
    finally:
        os.close(write_end)
    assert b"returned" in done.stderr
    assert done.returncode == 120  # the interpreter's own exit when it cannot flush stdout


def test_a_read_ends_with_its_error_line_and_exit_code() -> None:
    # Nothing listens on port 1: the read cannot start, one line and exit 2 (README).
    done = subprocess.run(
        [CONSOLE, "lag", "-g", "g", "--namesrv", "127.0.0.1:1"],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(b"rmq-console: error: ")
    assert done.stderr.count(b"\n") == 1

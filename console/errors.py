"""The errors an operator can act on, as one family: what the command line prints as one line and
exits 2 for, and anything else is a bug (console/cli/__init__.py).

`UserError` is the family: bad input, a refusal, a file that cannot be used. The errors of each
part (ConfigError, SpecError, JournalError, ...) are members; `Refused` is a write (or the plan
it needs) that cannot go ahead, whichever door asked for it. `BadFile` is a file the console
reads that cannot be used: it names the file, and the line where there is one. This module
imports no library and nothing of the console's, so every layer (and `rmq-console --help`) can
use it without loading pyarrow or Spark.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


class UserError(Exception):
    """Something the operator can fix or decide: shown as it is, on one line."""


class BadInput(UserError, ValueError):
    """A value given on the command line or in a form that cannot be used (a name, an address,
    a URL); a ValueError too, as the checks that raise it raised before."""


class Refused(UserError):
    """A write (or a plan it needs) that cannot go ahead, refused before anything was written.
    `reasons` are one line each."""

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = tuple(reasons)
        super().__init__("; ".join(self.reasons))


class BadFile(UserError, ValueError):
    """A file that cannot be used: missing, a directory, not UTF-8, binary, empty, cut short, or
    of the wrong shape. `str()` is `path:line: problem` (`path: problem` when no line applies).

    A ValueError too, so that readers which turned bad content into their own refusal
    (`except ValueError`) keep doing so."""

    def __init__(self, path: str | os.PathLike[str], problem: str, *, line: int | None = None):
        self.path = os.fspath(path)
        self.line = line
        self.problem = problem
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self) -> tuple[object, ...]:
        # Crosses a process boundary (the console's network process) as itself.
        return (_bad_file, (type(self), self.path, self.problem, self.line))


def _bad_file(kind: type[BadFile], path: str, problem: str, line: int | None) -> BadFile:
    return kind(path, problem, line=line)


def read_failure(path: str | os.PathLike[str], exc: OSError | UnicodeDecodeError) -> BadFile:
    """A BadFile for why `path` could not be read as text: no such file, a directory, no
    permission, or bytes that are not UTF-8 (with the line of the first one)."""
    if isinstance(exc, UnicodeDecodeError):
        line = exc.object[: exc.start].count(b"\n") + 1 if isinstance(exc.object, bytes) else None
        return BadFile(path, "not UTF-8 text (a binary or differently encoded file?)", line=line)
    if isinstance(exc, IsADirectoryError):
        return BadFile(path, "a directory, not a file")
    if isinstance(exc, FileNotFoundError):
        return BadFile(path, "no such file")
    return BadFile(path, f"cannot be read: {exc.strerror or exc}")


def read_text(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> str:
    """The text of a local file, or BadFile naming it (never OSError or UnicodeDecodeError).
    A NUL byte means a binary file, whatever the decoder made of it."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise read_failure(path, exc) from None
    return decode(path, data, encoding=encoding)


def decode(path: str | os.PathLike[str], data: bytes, *, encoding: str = "utf-8") -> str:
    """`data` (the content of `path`) as text, or BadFile naming the file and line."""
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise read_failure(path, exc) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise BadFile(path, "binary content (a NUL byte)", line=text.count("\n", 0, nul) + 1)
    return text


def yaml_failure(path: str | os.PathLike[str], exc: Exception, text: str = "") -> BadFile:
    """A BadFile for a YAML parser's error on `text` (yaml.YAMLError, read by its attributes so
    that this module need not import yaml): the line of its mark, or of the character it could
    not take."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line: int | None = mark.line + 1 if mark is not None else None
    position = getattr(exc, "position", None)
    if line is None and isinstance(position, int) and text:
        line = text.count("\n", 0, position) + 1
    problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc)
    return BadFile(path, f"invalid YAML: {' '.join(str(problem).split())}", line=line)

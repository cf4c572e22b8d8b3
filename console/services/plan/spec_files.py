"""Reset specs read from files: the spec itself (YAML or JSON) and a from-file strategy's CSV of
offsets, relative to the spec. Every error names the file, and the line where there is one: a
field's error is `reset.yaml:4: strategy.to-timestamp: ...` (console/lined_yaml.py keeps the
lines); the spec's rules are console/domain/spec.py's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from console import json_text
from console.domain.offsets_csv import parse_offsets_csv
from console.domain.spec import FileOffset, ResetSpec, SpecError, parse_spec
from console.errors import BadFile, read_text
from console.lined_yaml import line_at, load_lined


def load_spec(path: Path) -> ResetSpec:
    """Read a YAML or JSON spec; a from-file strategy's CSV is read relative to the spec."""
    try:
        text = read_text(path)
    except BadFile as exc:
        raise SpecError(_file_where(exc), f"cannot read the spec: {exc.problem}") from None
    doc = _parse_document(text, path)
    try:
        return read_spec(doc, base_dir=path.parent, source=str(path))
    except SpecError as exc:
        if exc.where.split(".", 1)[0].split("[", 1)[0] not in _FIELDS:
            raise  # it names a file already: the spec's own, or the offsets file's line
        line = _field_line(doc, text, path, exc.where)
        where = f"{path}:{line}" if line is not None else str(path)
        raise SpecError(where, f"{exc.where}: {exc.problem}") from None


def read_spec(data: Any, *, base_dir: Path | None = None, source: str = "spec") -> ResetSpec:
    """A spec from decoded YAML/JSON (or the console's form), a from-file strategy's CSV read
    from this machine (relative to `base_dir`)."""
    return parse_spec(data, base_dir=base_dir, source=source, load_offsets=load_offsets_file)


def load_offsets_file(path: Path) -> tuple[FileOffset, ...]:
    try:
        text = read_text(path, encoding="utf-8-sig")
    except BadFile as exc:
        raise SpecError(_file_where(exc), f"cannot read the offsets file: {exc.problem}") from None
    return parse_offsets_csv(text, str(path))


_FIELDS = {"scope", "strategy", "clamp"}


def _file_where(exc: BadFile) -> str:
    return exc.path if exc.line is None else f"{exc.path}:{exc.line}"


def _parse_document(text: str, path: Path) -> Any:
    if path.suffix.lower() == ".json":
        try:
            return json_text.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"{path}:{exc.lineno}", f"invalid JSON: {exc.msg}") from None
    try:
        return load_lined(text, path)
    except BadFile as exc:
        raise SpecError(_file_where(exc), exc.problem) from None


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _field_line(doc: Any, text: str, path: Path, where: str) -> int | None:
    """The line a field path (`scope.groups[1]`) points at: the deepest part of it the document
    has (JSON is read again as YAML for its lines)."""
    if path.suffix.lower() == ".json":
        try:
            doc = load_lined(text, path)
        except BadFile:
            return None
    steps = [name if name else int(index) for name, index in _STEP.findall(where)]
    return line_at(doc, steps)

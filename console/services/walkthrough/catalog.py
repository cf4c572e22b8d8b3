"""The walkthroughs' files: every `*.yaml` of the shipped folder and the user's, read into
`Walkthrough` values (console/domain/walkthrough.py says what a file holds). A file that cannot
be used is a `WalkthroughError` naming the file and line (console/lined_yaml.py keeps the
lines), and the others still load."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from console.domain.walkthrough import (
    Catalogue,
    Option,
    Step,
    StepKind,
    Walkthrough,
    WalkthroughError,
    template_names,
)
from console.errors import BadFile, read_text
from console.lined_yaml import LinedMap, load_lined

_ID = re.compile(r"^[a-z][a-z0-9_-]*$")
_TOP = {"name", "title", "question", "summary", "evidence", "steps", "spec", "after", "order"}
_STEP = {"id", "kind", "ask", "why", "default", "optional", "options", "evidence", "choices_from"}
#: Names a template may use besides the steps' ids and the evidence's values.
BUILTIN_NAMES = frozenset({"group", "cluster"})


def load_catalogue(dirs: Iterable[Path], evidence_kinds: Iterable[str]) -> Catalogue:
    """Every `*.yaml` / `*.yml` of `dirs`, in order; a later file of the same name replaces an
    earlier one (a team's own version of a shipped walkthrough). A file that cannot be used is
    a problem, not a crash, and the others still load."""
    kinds = frozenset(evidence_kinds)
    found: dict[str, Walkthrough] = {}
    problems: list[WalkthroughError] = []
    for folder in dirs:
        if not folder.is_dir():
            continue
        for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
            try:
                w = parse_walkthrough(read_text(path), str(path), kinds)
            except WalkthroughError as exc:
                problems.append(exc)
            except BadFile as exc:
                where = exc.path if exc.line is None else f"{exc.path}:{exc.line}"
                problems.append(WalkthroughError(where, exc.problem))
            else:
                found[w.name] = w
    ordered = sorted(found.values(), key=lambda w: (w.order, w.name))
    return Catalogue(tuple(ordered), tuple(problems))


def parse_walkthrough(text: str, source: str, evidence_kinds: Iterable[str]) -> Walkthrough:
    try:
        doc = load_lined(text, source)
    except BadFile as bad:
        problem = bad.problem.replace("invalid YAML", "not valid YAML", 1)
        raise WalkthroughError(f"{source}:{bad.line or 1}", problem) from None
    if not isinstance(doc, LinedMap):
        raise WalkthroughError(f"{source}:1", "expected a mapping with name, title, steps, spec")
    kinds = frozenset(evidence_kinds)
    at = _Where(source, doc)
    unknown = sorted(set(doc) - _TOP, key=str)
    if unknown:
        raise WalkthroughError(at.of(unknown[0]), f"unknown field {unknown[0]!r}")
    name = _text(doc, "name", at)
    if not _ID.match(name):
        raise WalkthroughError(at.of("name"), f"{name!r}: use lowercase letters, digits, - and _")
    steps = _steps(doc.get("steps"), at, kinds)
    spec = doc.get("spec")
    if not isinstance(spec, dict) or "strategy" not in spec:
        raise WalkthroughError(at.of("spec"), "spec: a mapping with at least a strategy")
    walkthrough = Walkthrough(
        name=name,
        title=_text(doc, "title", at),
        question=_text(doc, "question", at),
        summary=_text(doc, "summary", at, required=False),
        steps=steps,
        spec=_plain(spec),
        evidence=_names(doc.get("evidence"), at.of("evidence"), kinds),
        after=_names(doc.get("after"), at.of("after"), kinds),
        source=f"{source}:{doc.line}",
        order=_order(doc, at),
    )
    # A name the template uses that no step gives is a typo today, not a failure at 3 a.m.
    ids = {s.id for s in steps}
    for used in template_names(spec):
        head = used.split(".", 1)[0]
        if head not in ids and head not in BUILTIN_NAMES and "." not in used:
            raise WalkthroughError(at.of("spec"), f"spec uses {{{used}}}, which no step asks for")
    return walkthrough


class _Where:
    def __init__(self, source: str, doc: LinedMap) -> None:
        self.source = source
        self.doc = doc

    def of(self, key: Any, doc: LinedMap | None = None) -> str:
        d = doc if doc is not None else self.doc
        return f"{self.source}:{d.key_lines.get(key, d.line)}"


def _order(doc: LinedMap, at: _Where) -> int:
    value = doc.get("order", 100)
    if not isinstance(value, int) or isinstance(value, bool):
        raise WalkthroughError(at.of("order"), "order: expected a whole number")
    return value


def _text(doc: LinedMap, key: str, at: _Where, *, required: bool = True) -> str:
    value = doc.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise WalkthroughError(at.of(key, doc), f"{key}: expected text")
    return value.strip()


def _names(value: Any, where: str, kinds: frozenset[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise WalkthroughError(where, "expected a list of evidence names")
    for v in value:
        if v not in kinds:
            raise WalkthroughError(
                where, f"unknown evidence {v!r}; known: {', '.join(sorted(kinds))}"
            )
    return tuple(value)


def _steps(value: Any, at: _Where, kinds: frozenset[str]) -> tuple[Step, ...]:
    if not isinstance(value, list) or not value:
        raise WalkthroughError(at.of("steps"), "steps: expected a list of at least one step")
    steps: list[Step] = []
    for item in value:
        if not isinstance(item, LinedMap):
            raise WalkthroughError(at.of("steps"), "each step is a mapping with id, kind, ask")
        unknown = sorted(set(item) - _STEP, key=str)
        if unknown:
            raise WalkthroughError(at.of(unknown[0], item), f"unknown step field {unknown[0]!r}")
        step_id = _text(item, "id", at)
        if not _ID.match(step_id) or step_id in BUILTIN_NAMES:
            raise WalkthroughError(at.of("id", item), f"step id {step_id!r} is not usable")
        if any(s.id == step_id for s in steps):
            raise WalkthroughError(at.of("id", item), f"step id {step_id!r} is used twice")
        kind_text = _text(item, "kind", at)
        try:
            kind = StepKind(kind_text)
        except ValueError:
            raise WalkthroughError(
                at.of("kind", item),
                f"kind {kind_text!r}; one of {', '.join(k.value for k in StepKind)}",
            ) from None
        options = _options(item, at) if kind is StepKind.CHOICE else ()
        if kind is StepKind.CHOICE and not options:
            raise WalkthroughError(at.of("kind", item), "a choice step needs options")
        default = item.get("default")
        choices_from = item.get("choices_from")
        if kind is StepKind.QUEUE and not isinstance(choices_from, str):
            raise WalkthroughError(
                at.of("kind", item),
                "a queue step names the evidence value it offers (choices_from: stuck.queues)",
            )
        steps.append(
            Step(
                id=step_id,
                kind=kind,
                ask=_text(item, "ask", at),
                why=_text(item, "why", at, required=False),
                default=None if default is None else str(default),
                optional=bool(item.get("optional", False)),
                options=options,
                evidence=_names(item.get("evidence"), at.of("evidence", item), kinds),
                choices_from=choices_from if isinstance(choices_from, str) else None,
                line=item.line,
            )
        )
    return tuple(steps)


def _options(item: LinedMap, at: _Where) -> tuple[Option, ...]:
    raw = item.get("options")
    if not isinstance(raw, list) or not raw:
        raise WalkthroughError(at.of("options", item), "options: a list of {value, label}")
    out: list[Option] = []
    for o in raw:
        if isinstance(o, str):
            out.append(Option(o, o))
        elif isinstance(o, dict) and isinstance(o.get("value"), str):
            out.append(Option(o["value"], str(o.get("label") or o["value"])))
        else:
            raise WalkthroughError(at.of("options", item), "each option: text or {value, label}")
    return tuple(out)


def _plain(value: Any) -> Any:
    """The template without line bookkeeping: plain dicts and lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value

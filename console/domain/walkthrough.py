"""Guided reset walkthroughs as data: what each asks, what evidence it shows, and the reset spec it
produces from the answers.

A walkthrough is a YAML file (the product ships some in console/walkthroughs/, a team adds its
own in the config folder's walkthroughs/):

    name: replay-since                   # what `rmq-console walkthrough NAME` takes
    title: Replay since an incident
    question: Re-consume everything stored since {since}   # the report's first line
    summary: One paragraph: when to use it and what it does.
    evidence: [group, clients]           # shown before the first question
    steps:
      - id: since                        # the answer's name in the spec template
        kind: time                       # how the answer is read and checked (StepKind)
        ask: Replay every message stored since when?
        why: Each queue goes back to the first message stored at or after that time.
        default: 1h ago                  # optional
        evidence: [time-per-queue]       # shown once the answer is taken
    spec:                                # a reset spec (see console/domain/spec.py) whose
      strategy: {to-timestamp: "{since}"}   # strings name answers and evidence values
    after: [moved-on]                    # evidence gathered after the apply

A string that is exactly `{name}` becomes the value itself (a number, a list); `{name}` inside a
longer string is replaced by its text. Names are step ids, `group`, `cluster`, and values the
evidence offers (`stuck.topic`). Every problem in a file is a `WalkthroughError` naming the file
and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from console.errors import BadFile, UserError, read_text, yaml_failure


class WalkthroughError(UserError, ValueError):
    """A walkthrough file that cannot be used; says where (`file:line`) and what."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


class StepKind(StrEnum):
    TIME = "time"  # a moment: 10:05 (today, local zone), 2026-11-22 10:05, ISO with zone, 1h ago
    DURATION = "duration"  # 30m, 2h
    GROUP = "group"  # another consumer group of the cluster
    CHOICE = "choice"  # one of the step's options
    SNAPSHOT = "snapshot"  # a snapshot id of the cluster, or a time: the newest at or before it
    QUEUE = "queue"  # one of the queues the evidence offers (topic/broker/queue id)
    TOPICS = "topics"  # some of the group's topics, comma-separated; blank means all
    NUMBER = "number"  # a whole number
    TARGET = "target"  # where to move: latest, earliest, or a time (as for kind time)


@dataclass(frozen=True, slots=True)
class Option:
    value: str
    label: str


@dataclass(frozen=True, slots=True)
class Step:
    id: str
    kind: StepKind
    ask: str
    why: str = ""
    default: str | None = None
    optional: bool = False
    options: tuple[Option, ...] = ()
    evidence: tuple[str, ...] = ()
    #: For kind queue: the evidence value listing the queues to choose from.
    choices_from: str | None = None
    line: int = 0


@dataclass(frozen=True, slots=True)
class Walkthrough:
    name: str
    title: str
    question: str
    summary: str
    steps: tuple[Step, ...]
    spec: Mapping[str, Any]
    evidence: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    #: The file it was read from (`file:line` of its start), for errors and the report.
    source: str = ""
    #: Where it comes in lists (lower first; then by name).
    order: int = 100

    def step(self, step_id: str) -> Step:
        return next(s for s in self.steps if s.id == step_id)


@dataclass(frozen=True, slots=True)
class Catalogue:
    """Walkthroughs by name, in the order found, and the files that could not be used."""

    walkthroughs: tuple[Walkthrough, ...] = ()
    problems: tuple[WalkthroughError, ...] = ()

    def get(self, name: str) -> Walkthrough | None:
        return next((w for w in self.walkthroughs if w.name == name), None)

    @property
    def names(self) -> list[str]:
        return [w.name for w in self.walkthroughs]


# ---- loading ------------------------------------------------------------------------------------

_ID = re.compile(r"^[a-z][a-z0-9_-]*$")
_TOP = {"name", "title", "question", "summary", "evidence", "steps", "spec", "after", "order"}
_STEP = {"id", "kind", "ask", "why", "default", "optional", "options", "evidence", "choices_from"}
#: Names a template may use besides the steps' ids and the evidence's values.
BUILTIN_NAMES = frozenset({"group", "cluster"})


class _Lined(dict[Any, Any]):
    """A YAML mapping that remembers the line each of its keys is on (1-based)."""

    line: int = 0
    key_lines: dict[Any, int]


class _Loader(yaml.SafeLoader):
    pass


def _mapping(loader: _Loader, node: yaml.MappingNode) -> _Lined:
    out = _Lined()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                problem="a key that is a list or a mapping", problem_mark=key_node.start_mark
            ) from None
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


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
        doc = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        bad = yaml_failure(source, exc, text)
        problem = bad.problem.replace("invalid YAML", "not valid YAML", 1)
        raise WalkthroughError(f"{source}:{bad.line or 1}", problem) from None
    if not isinstance(doc, _Lined):
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
    def __init__(self, source: str, doc: _Lined) -> None:
        self.source = source
        self.doc = doc

    def of(self, key: Any, doc: _Lined | None = None) -> str:
        d = doc if doc is not None else self.doc
        return f"{self.source}:{d.key_lines.get(key, d.line)}"


def _order(doc: _Lined, at: _Where) -> int:
    value = doc.get("order", 100)
    if not isinstance(value, int) or isinstance(value, bool):
        raise WalkthroughError(at.of("order"), "order: expected a whole number")
    return value


def _text(doc: _Lined, key: str, at: _Where, *, required: bool = True) -> str:
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
        if not isinstance(item, _Lined):
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


def _options(item: _Lined, at: _Where) -> tuple[Option, ...]:
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


# ---- the spec from the answers -------------------------------------------------------------------

_NAME = re.compile(r"\{([a-z][a-z0-9_.-]*)\}")


class MissingValue(KeyError):
    """A template names a value that the answers and the evidence did not give."""


def template_names(template: Any) -> list[str]:
    if isinstance(template, Mapping):
        return [n for v in template.values() for n in template_names(v)]
    if isinstance(template, list):
        return [n for v in template for n in template_names(v)]
    if isinstance(template, str):
        return _NAME.findall(template)
    return []


def render(template: Any, values: Mapping[str, Any]) -> Any:
    """The template with names replaced by `values`. A value of None drops its key (an optional
    step left blank); an unknown name raises MissingValue."""
    if isinstance(template, Mapping):
        out = {}
        for k, v in template.items():
            rendered = render(v, values)
            if rendered is not None:
                out[k] = rendered
        return out
    if isinstance(template, list):
        return [r for r in (render(v, values) for v in template) if r is not None]
    if isinstance(template, str):
        whole = _NAME.fullmatch(template)
        if whole:
            return _value(values, whole.group(1))
        return _NAME.sub(lambda m: _text_of(_value(values, m.group(1))), template)
    return template


def _value(values: Mapping[str, Any], name: str) -> Any:
    if name not in values:
        raise MissingValue(name)
    return values[name]


def _text_of(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the cluster showed for one evidence name: lines for the operator (and the report),
    values a template or a later step may use, and what could not be read."""

    name: str
    title: str
    lines: tuple[str, ...]
    values: Mapping[str, Any] = field(default_factory=dict)
    #: Parts that could not be read (a broker that did not answer, ...): never shown as fine.
    missing: tuple[str, ...] = ()


def values_of(evidence: Sequence[Evidence]) -> dict[str, Any]:
    """Every evidence value by its dotted name (`stuck.queues`), later evidence winning."""
    out: dict[str, Any] = {}
    for e in evidence:
        out.update({f"{e.name}.{k}": v for k, v in e.values.items()})
    return out

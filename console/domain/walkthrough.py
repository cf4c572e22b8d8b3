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
and line. The files are read by console/services/walkthrough/catalog.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from console.errors import UserError


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

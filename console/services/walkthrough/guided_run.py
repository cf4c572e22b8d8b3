"""A guided reset walkthrough as a value the console and `rmq-console walkthrough` both drive.

A `WalkthroughRun` holds one walkthrough for one group: the answers taken so far, the evidence
shown with them, the spec they produce, and — once planned, applied and verified through the
standard preview → confirm → apply path — the plan, the journal and what the cluster showed
after. It is what the report is written from (console/services/walkthrough/report.py).

Answers are read and checked here (`check_plain_answer`; those that need the cluster in
console/services/walkthrough/evidence/answers.py); evidence is gathered by the providers of
console/services/walkthrough/evidence/. Both read the cluster through a `ClusterReader`, never
write to it: the one write is the apply's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.config import config_path
from console.domain.spec import ResetSpec, SpecError, parse_duration, parse_timestamp
from console.domain.walkthrough import (
    Catalogue,
    Evidence,
    MissingValue,
    Step,
    StepKind,
    Walkthrough,
    render,
    template_names,
    values_of,
)
from console.errors import UserError
from console.services.plan.spec_files import read_spec
from console.services.walkthrough.catalog import load_catalogue
from console.services.walkthrough.evidence.titles import TITLES

if TYPE_CHECKING:
    from console.domain.journal import Journal
    from console.domain.plan import PlanHeader, PlanRow
    from console.services.plan.load import LoadedPlan
    from console.services.plan.preview_flow import ResetFlow

#: The folder of a user's own walkthroughs, beside the config file.
USER_FOLDER = "walkthroughs"


def catalogue_dirs(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The shipped walkthroughs, then the user's (which may replace a shipped one by name)."""
    shipped = Path(str(resources.files("console.walkthroughs")))
    return [shipped, config_path(environ).parent / USER_FOLDER]


def load_walkthroughs(
    dirs: Sequence[Path] | None = None, environ: Mapping[str, str] | None = None
) -> Catalogue:
    return load_catalogue(dirs if dirs is not None else catalogue_dirs(environ), TITLES)


class AnswerError(UserError, ValueError):
    """An answer that cannot be used; the text says what is wrong and what would do."""


@dataclass(frozen=True, slots=True)
class Answer:
    text: str  # as typed (or the default taken)
    value: Any  # what the spec template receives
    shown: str  # how the report and the screen say it (a time with its zone, ...)
    #: Further values under the step's name (`queue.topic`, `since.iso`).
    extras: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class WalkthroughRun:
    walkthrough: Walkthrough
    cluster: str
    group: str
    started_at_ms: int
    answers: dict[str, Answer] = field(default_factory=dict)
    #: Evidence in the order it was shown: the walkthrough's, then each step's after its answer.
    evidence: list[Evidence] = field(default_factory=list)
    spec: ResetSpec | None = None
    plan_header: PlanHeader | None = None
    plan_uri: str | None = None
    plan_rows: tuple[PlanRow, ...] = ()
    warnings: dict[str, int] = field(default_factory=dict)
    boundaries: tuple[Any, ...] = ()
    #: The plan as the apply loads it (hash checked), once planned.
    loaded_plan: LoadedPlan | None = None
    #: The reset's own walkthrough (plan, confirm, apply), as the CLI drives it.
    flow: ResetFlow | None = None
    journal: Journal | None = None
    journal_path: str | None = None
    report_path: str | None = None
    after: list[Evidence] = field(default_factory=list)
    #: Why the walkthrough ended without an apply (refused, cancelled, plan failed).
    ended: str | None = None

    # ---- where it stands ----------------------------------------------------------------------

    @property
    def next_step(self) -> Step | None:
        return next((s for s in self.walkthrough.steps if s.id not in self.answers), None)

    @property
    def asked_all(self) -> bool:
        return self.next_step is None

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {"group": self.group, "cluster": self.cluster}
        out.update(values_of(self.evidence))
        for step_id, a in self.answers.items():
            out[step_id] = a.value
            out.update({f"{step_id}.{k}": v for k, v in a.extras.items()})
        return out

    def take(self, step: Step, answer: Answer | None) -> None:
        """Record an answer (None: an optional step left blank, which the spec leaves out);
        a changed answer drops the spec built from the old one."""
        self.answers[step.id] = answer if answer is not None else Answer("", None, "(all)")
        self.spec = None

    def show(self, evidence: Sequence[Evidence]) -> None:
        names = {e.name for e in evidence}
        # Evidence gathered again (after an answer changed) replaces what it said before.
        self.evidence = [e for e in self.evidence if e.name not in names] + list(evidence)

    def question(self) -> str:
        """The walkthrough's question with the answers as shown (`since 10:05 CET`)."""
        shown: dict[str, Any] = {"group": self.group, "cluster": self.cluster}
        shown.update(values_of(self.evidence))
        shown.update({k: a.shown for k, a in self.answers.items()})
        # Steps not answered yet read as "…" until they are.
        shown.update({n: "…" for n in template_names(self.walkthrough.question) if n not in shown})
        return str(render(self.walkthrough.question, shown))

    def build_spec(self) -> ResetSpec:
        """The reset spec the answers give; SpecError names what is wrong with it."""
        self.spec = self._spec()
        return self.spec

    def draft_spec(self) -> ResetSpec | None:
        """The spec the answers so far give, without keeping it; None while a value it needs
        is not given yet (or does not make a spec)."""
        if self.spec is not None:
            return self.spec
        try:
            return self._spec()
        except SpecError:
            return None

    def _spec(self) -> ResetSpec:
        try:
            doc = render(self.walkthrough.spec, self.values())
        except MissingValue as exc:
            raise SpecError(
                "walkthrough", f"{self.walkthrough.name}: no value for {{{exc.args[0]}}}"
            ) from None
        scope = dict(doc.get("scope") or {})
        scope["cluster"] = self.cluster
        scope.setdefault("groups", [self.group])
        doc["scope"] = scope
        return read_spec(doc)


# ---- answers ------------------------------------------------------------------------------------


def local_zone(now: datetime | None = None) -> str:
    """The zone times are read in, as the operator should see it: `CET (+01:00)`."""
    moment = (now or datetime.now()).astimezone()
    offset = moment.strftime("%z")
    return f"{moment.tzname()} ({offset[:3]}:{offset[3:]})"


def show_time(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000).astimezone()
    return f"{moment:%Y-%m-%d %H:%M:%S} {moment.tzname()}"


_CLOCK = re.compile(r"^(?:(yesterday|today)\s+)?(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_LOCAL_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(:\d{2})?$")
_AGO = re.compile(r"^(?:-\s*(.+)|(.+?)\s+ago)$")


def parse_time(text: str, now_ms: int) -> int:
    """A moment as an operator types it: `10:05` (today, local zone), `yesterday 23:40`,
    `2026-11-22 10:05` (local), ISO 8601 with a zone, epoch ms, or `90m ago` / `-2h`.
    A moment after `now_ms` is refused: nothing was stored there yet."""
    t = text.strip()
    if not t:
        raise AnswerError("give a time, e.g. 10:05, yesterday 23:40, 2h ago")
    now = datetime.fromtimestamp(now_ms / 1000).astimezone()
    ms: int
    clock = _CLOCK.match(t.lower())
    ago = _AGO.match(t.lower())
    if clock:
        day, hh, mm, ss = clock.groups()
        if int(hh) > 23 or int(mm) > 59 or int(ss or 0) > 59:
            raise AnswerError(f"{t!r} is not a time of day")
        moment = now.replace(hour=int(hh), minute=int(mm), second=int(ss or 0), microsecond=0)
        if day == "yesterday":
            moment -= timedelta(days=1)
        ms = int(moment.timestamp() * 1000)
        if ms > now_ms and day is None:
            raise AnswerError(
                f"{t} today ({show_time(ms)}) is in the future; for the day before, type "
                f"yesterday {t}"
            )
    elif _LOCAL_DATE.match(t):
        try:
            moment = datetime.fromisoformat(t.replace(" ", "T")).astimezone()
        except ValueError:
            raise AnswerError(f"{t!r} is not a date and time") from None
        ms = int(moment.timestamp() * 1000)
    elif ago and not t.lstrip("-").strip().isdigit():
        try:
            ms = now_ms - parse_duration((ago.group(1) or ago.group(2)).strip(), "time")
        except SpecError as exc:
            raise AnswerError(exc.problem) from None
    else:
        try:
            ms = parse_timestamp(t, "time")
        except SpecError as exc:
            raise AnswerError(
                f"{exc.problem}; or type 10:05 (today), yesterday 23:40, 2h ago"
            ) from None
    if ms > now_ms:
        raise AnswerError(
            f"{show_time(ms)} is in the future (now {show_time(now_ms)}): no message is stored "
            "there yet"
        )
    return ms


def queue_name(topic: str, broker: str, queue_id: int) -> str:
    return f"{topic}/{broker}/{queue_id}"


def check_plain_answer(step: Step, text: str, now_ms: int) -> Answer:
    """The kinds that need nothing from the cluster: time, target, duration, choice, number."""
    t = text.strip()
    if step.kind is StepKind.TIME:
        ms = parse_time(t, now_ms)
        iso = datetime.fromtimestamp(ms / 1000).astimezone().isoformat(timespec="seconds")
        return Answer(t, ms, show_time(ms), {"iso": iso})
    if step.kind is StepKind.TARGET:
        if t.lower() in ("latest", "earliest"):
            where = "the newest message" if t.lower() == "latest" else "the oldest kept message"
            return Answer(t, t.lower(), f"{t.lower()} ({where})", {"ms": None})
        ms = parse_time(t, now_ms)
        return Answer(t, {"to-timestamp": ms}, show_time(ms), {"ms": ms})
    if step.kind is StepKind.DURATION:
        try:
            ms = parse_duration(t, "duration")
        except SpecError as exc:
            raise AnswerError(exc.problem) from None
        if ms <= 0:
            raise AnswerError("give a duration above zero, e.g. 30m")
        return Answer(t, t, t, {"ms": ms, "since": now_ms - ms})
    if step.kind is StepKind.CHOICE:
        for i, o in enumerate(step.options, 1):
            if t.lower() in (o.value.lower(), str(i)):
                return Answer(t, o.value, o.label)
        choices = ", ".join(f"{i} {o.value}" for i, o in enumerate(step.options, 1))
        raise AnswerError(f"{t!r} is not one of: {choices}")
    if step.kind is StepKind.NUMBER:
        try:
            return Answer(t, int(t.replace("_", "")), t)
        except ValueError:
            raise AnswerError(f"{t!r} is not a whole number") from None
    raise AnswerError(f"a {step.kind} answer needs the cluster")

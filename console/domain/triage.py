"""Triage of consumer groups over the console's refresh history: status, lag trend, time behind.

Pure functions over `GroupOffsets` samples: no I/O and no clock (callers pass `now_ms`), so every
rule can be tested with hand-made samples.

Status follows Burrow (github.com/linkedin/Burrow, "Consumer Lag Evaluation Rules"), evaluated
per queue over the last refreshes (the *window*) and reported for the group as its worst queue.
Burrow's STOP means "the consumer stopped committing"; a RocketMQ consumer commits on a timer
whether it progresses or not, so commit arrivals say nothing and STOP is read as "nobody is
online to consume". The rules, in the order they are tried, are `STATUS_RULES`.

Time behind = now - store time of the first unconsumed message. The broker computes exactly that
per queue (QUERY_CONSUME_TIME_SPAN `delayTime`), so the console asks it for the queues with lag
and passes the answers in as `delays`. The consume stats' `lastTimestamp` (store time of the last
*consumed* message) is not used as a stand-in: after a quiet hour the first new message is seconds
old while the last consumed one is an hour old, so it would overstate a fresh backlog. A lagging
queue without an answer leaves the time behind unknown rather than guessed.

A read that lacks parts (a broker that did not answer, a gap the reader names) is *partial*:
its total is a lower bound, its status is never OK (ERR when what was read is fine), and no
trend or sparkline is drawn across a change in what was read. Otherwise a broker going down
would read as a recovery: its share of the lag leaves the total, which falls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from console.domain.lag import LagPoint
from console.domain.lag import missing as missing  # what a read lacks, by name
from console.domain.lag_trend import LagTrend, lag_series, lag_trend, time_behind_ms
from console.domain.offsets import (
    CLIENT_LOCAL_NOTE,
    GroupOffsets,
    QueueKey,
)
from console.domain.readings import Reading, Sample

#: Refreshes needed before the trend rules (STALL, WARN) may fire.
MIN_SAMPLES = 3


class Status(StrEnum):
    OK = "OK"
    #: Parts of the read are missing and what was read says nothing worse: unknown, not OK.
    ERR = "ERR"
    WARN = "WARN"
    REWIND = "REWIND"
    STALL = "STALL"
    STOP = "STOP"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


# ERR ranks above OK and below every status the queues read show: when a broker goes down,
# every group on it turns ERR, and those must not bury the groups known to be in trouble.
_SEVERITY = {
    Status.OK: 0,
    Status.ERR: 1,
    Status.WARN: 2,
    Status.REWIND: 3,
    Status.STALL: 4,
    Status.STOP: 5,
}

RULE_CAUGHT_UP = "lag is 0 on the queue now"
RULE_NOBODY = "lag above 0 and no client online: nobody is consuming"
RULE_WAS_CAUGHT_UP = "lag was 0 at some refresh in the window"
RULE_REWIND = "the committed offset went backwards between two refreshes"
RULE_STALL = (
    f"clients online, lag above 0, committed offset unchanged over {MIN_SAMPLES}+ refreshes"
)
RULE_WARN = f"committed offset moves, but lag grew over {MIN_SAMPLES}+ refreshes and never shrank"
RULE_OTHERWISE = "otherwise"
RULE_PARTIAL = "the read lacks parts (a broker did not answer) and what was read is OK"
#: Not rules of their own: why none of the rules above could be tried.
RULE_TOO_FEW = f"fewer than {MIN_SAMPLES} refreshes with a committed offset: no trend yet"
RULE_NO_VOTERS = "no topic queue has a committed offset: nothing to judge"
RULE_NOTHING = "nothing stored to judge"

STATUS_RULES: tuple[tuple[Status, str], ...] = (
    (Status.OK, RULE_CAUGHT_UP),
    (Status.STOP, RULE_NOBODY),
    (Status.OK, RULE_WAS_CAUGHT_UP),
    (Status.REWIND, RULE_REWIND),
    (Status.STALL, RULE_STALL),
    (Status.WARN, RULE_WARN),
    (Status.OK, RULE_OTHERWISE),
    (Status.ERR, RULE_PARTIAL),
)
"""Per queue, the first rule that matches decides; the group takes its worst queue
(STOP > STALL > REWIND > WARN > OK), the one with most lag among equals. Only the group's topics
vote: the retry queue has its own column, and a queue with nothing committed has unknown lag and
no say. Over a partial read an OK becomes ERR ("partial read"), and any status says the read
was partial."""


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    reason: str
    #: Whether the window held enough refreshes for every rule to be tried.
    complete: bool
    queue: QueueKey | None = None
    #: The read lacked parts: the status speaks for what was read only.
    partial: bool = False
    #: The rule of `STATUS_RULES` that decided (or why none could be tried).
    rule: str = ""


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One line of the group list: the latest offsets and what the window says about them."""

    offsets: GroupOffsets
    verdict: Verdict
    #: None with fewer than two comparable refreshes, or over a partial read
    trend: LagTrend | None
    time_behind_ms: int | None
    #: Total lag of each refresh since what was read last changed (the sparkline)
    lag_history: tuple[int, ...]
    #: What the latest read lacks, by name (see `missing`)
    missing: tuple[str, ...] = ()
    #: The window held older refreshes that read something else: they are not drawn
    restarted: bool = False

    @property
    def group(self) -> str:
        return self.offsets.group

    @property
    def partial(self) -> bool:
        return bool(self.missing)


# ---- refreshes ------------------------------------------------------------------------------


# ---- status ------------------------------------------------------------------------------------


def partial_note(lacks: Sequence[str]) -> str:
    """`no answer from broker-b`, `missing in-flight g` (a part that is not a broker: a queue,
    the clients, a POP group's in-flight count), or both."""
    brokers = [name for name in lacks if " " not in name]
    parts = [name for name in lacks if " " in name]
    said = [f"no answer from {', '.join(brokers)}"] if brokers else []
    said += [f"missing {', '.join(parts)}"] if parts else []
    return "; ".join(said)


def evaluate(window: Sequence[Reading], *, min_samples: int = MIN_SAMPLES) -> Verdict:
    """The group's status: its worst queue under `STATUS_RULES`."""
    if not window:
        return Verdict(Status.OK, "not refreshed yet", complete=False)
    known = _evaluate_read(window, min_samples)
    lacks = window[-1].missing
    if not lacks:
        return known
    note = f"partial read: {partial_note(lacks)}"
    if known.status is Status.OK:
        return Verdict(Status.ERR, note, True, known.queue, partial=True, rule=RULE_PARTIAL)
    return Verdict(
        known.status,
        f"{known.reason} ({note})",
        known.complete,
        known.queue,
        True,
        rule=known.rule,
    )


def evaluate_points(points: Sequence[LagPoint], *, min_samples: int = MIN_SAMPLES) -> Verdict:
    """The same rules over stored points of the lag history (the chart's window): the window is
    every point with per-queue detail, the latest of them judged. Nothing stored, or a newest
    point whose detail was thinned away, is ERR: unknown, never OK."""
    if not points:
        return Verdict(
            Status.ERR, "no samples stored in the window", False, partial=True, rule=RULE_NOTHING
        )
    if not points[-1].detailed:
        return Verdict(
            Status.ERR,
            "the window's newest samples kept their totals only (per-queue detail thinned)",
            False,
            partial=True,
            rule=RULE_NOTHING,
        )
    return evaluate([Reading.of_point(p) for p in points if p.detailed], min_samples=min_samples)


def _evaluate_read(window: Sequence[Reading], min_samples: int) -> Verdict:
    """The rules over what the latest refresh read."""
    latest = window[-1]
    complete = len(window) >= min_samples
    if not latest.points:
        if latest.client_local:
            why = CLIENT_LOCAL_NOTE  # a broadcasting group's lag is on its clients, not here
        elif latest.topic_queues:
            why = "no committed offsets: lag unknown"
        else:
            why = "no queues"
        return Verdict(Status.OK, why, complete=complete, rule=RULE_NO_VOTERS)
    # Each queue judged to a Judgement; only the worst one's reason is written (a refresh of
    # 10,000 groups judges 160,000 queues and shows one line a group).
    worst: Judgement | None = None
    worst_key: QueueKey | None = None
    worst_lag = -1
    for key, (_, lag) in latest.points.items():
        judged = judge_queue(key, lag, window, latest.online, min_samples)
        severity = judged.status.severity
        if worst is None or (severity, lag) > (worst.status.severity, worst_lag):
            worst, worst_key, worst_lag = judged, key, lag
    assert worst is not None
    assert worst_key is not None
    reason = worst.reason(worst_key, worst_lag)
    # A POP group's messages popped and not acked are in its total, in no queue's lag.
    popped = latest.total_lag - sum(lag for _, lag in latest.points.values())
    if popped > 0:
        reason = f"{reason}; {popped} popped and not acked (POP)"
    return Verdict(worst.status, reason, complete, worst_key, rule=worst.rule)


@dataclass(frozen=True, slots=True)
class Judgement:
    """What the rules said of one queue, its reason not written yet: the facts it needs."""

    status: Status
    rule: str
    #: False when the rules lacked refreshes to try (RULE_TOO_FEW).
    complete: bool = True
    #: REWIND: committed before and after; STALL: the committed offset and the span (ms);
    #: WARN: the first and last lag and the span (ms).
    facts: tuple[int, ...] = ()

    def reason(self, key: QueueKey, lag: int) -> str:
        topic, broker, queue_id = key
        where = f"{topic}@{broker}:{queue_id}"
        rule, facts = self.rule, self.facts
        if rule == RULE_CAUGHT_UP:
            return f"{where} caught up"
        if rule == RULE_NOBODY:
            return f"{where} lag {lag}, no client online"
        if rule == RULE_WAS_CAUGHT_UP:
            return f"{where} was caught up in the window"
        if rule == RULE_REWIND:
            return f"{where} committed went back {facts[0]} -> {facts[1]}"
        if rule == RULE_TOO_FEW:
            return f"{where} lag {lag}"
        if rule == RULE_STALL:
            return f"{where} committed {facts[0]} unchanged for {span_text(facts[1])}, lag {lag}"
        if rule == RULE_WARN:
            return f"{where} lag grew {facts[0]} -> {facts[1]} over {span_text(facts[2])}"
        return f"{where} lag {lag}, consuming"


_CAUGHT_UP = Judgement(Status.OK, RULE_CAUGHT_UP)
_NOBODY = Judgement(Status.STOP, RULE_NOBODY)
_WAS_CAUGHT_UP = Judgement(Status.OK, RULE_WAS_CAUGHT_UP)
_TOO_FEW = Judgement(Status.OK, RULE_TOO_FEW, complete=False)
_OTHERWISE = Judgement(Status.OK, RULE_OTHERWISE)


def judge_queue(
    key: QueueKey, lag: int, window: Sequence[Reading], online: bool, min_samples: int
) -> Judgement:
    """One queue of the latest refresh, with its lag there, under `STATUS_RULES` over the
    window: the first rule that matches."""
    if lag == 0:
        return _CAUGHT_UP
    if not online:
        return _NOBODY
    # (taken at, committed, lag) at every refresh where the queue had a committed offset
    series = [(s.taken_at_ms, *s.points[key]) for s in window if key in s.points]
    lags = [s[2] for s in series]
    commits = [s[1] for s in series]
    if 0 in lags:
        return _WAS_CAUGHT_UP
    for (_, before, _), (_, after, _) in zip(series, series[1:], strict=False):
        if after < before:
            return Judgement(Status.REWIND, RULE_REWIND, facts=(before, after))
    if len(series) < min_samples:
        return _TOO_FEW
    span_ms = series[-1][0] - series[0][0]
    if len(set(commits)) == 1:
        return Judgement(Status.STALL, RULE_STALL, facts=(commits[0], span_ms))
    growing = all(b >= a for a, b in zip(lags, lags[1:], strict=False)) and lags[-1] > lags[0]
    if growing:
        return Judgement(Status.WARN, RULE_WARN, facts=(lags[0], lags[-1], span_ms))
    return _OTHERWISE


def queue_status(
    key: QueueKey, lag: int, window: Sequence[Reading], online: bool, min_samples: int
) -> Verdict:
    """One queue of the latest refresh, with its lag there, under `STATUS_RULES` over the
    window, with its reason."""
    judged = judge_queue(key, lag, window, online, min_samples)
    return Verdict(judged.status, judged.reason(key, lag), judged.complete, key, rule=judged.rule)


def span_text(ms: int) -> str:
    """A span as a reason says it: seconds up to two minutes, then minutes, then hours."""
    seconds = round(ms / 1000)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{round(seconds / 60)}m"
    hours, rest = divmod(round(seconds / 60), 60)
    return f"{hours}h{rest:02d}m"


# ---- trend and time behind -----------------------------------------------------------------------


def summarize(
    window: Sequence[Sample],
    delays: Mapping[QueueKey, int],
    *,
    min_samples: int = MIN_SAMPLES,
) -> GroupSummary:
    if not window:
        raise ValueError("a summary needs at least one refresh")
    latest = window[-1].offsets
    history = lag_series(window)
    return GroupSummary(
        offsets=latest,
        verdict=evaluate(window, min_samples=min_samples),
        trend=lag_trend(window),
        time_behind_ms=time_behind_ms(latest, delays),
        lag_history=history,
        missing=missing(latest),
        restarted=len(history) < len(window),
    )


def rank(status: Status, lag: int | None, group: str) -> tuple[int, int, str]:
    """Where a group stands in "worst first": status, then lag (unknown as none), then name."""
    return (-status.severity, -(lag or 0), group)


def worst_first(summaries: Iterable[GroupSummary]) -> list[GroupSummary]:
    """Worst status first, then most lag, then name."""
    return sorted(summaries, key=lambda s: rank(s.verdict.status, s.offsets.total_lag, s.group))


# ---- brokers -----------------------------------------------------------------------------------

NOT_REGISTERED = "not registered with the name server"


def vanished(known: Mapping[str, str], listed: Iterable[str]) -> dict[str, str]:
    """Brokers seen earlier (name -> address) that the name server no longer lists.

    A stopped broker unregisters (or its channel closes), so the name server simply stops naming
    it; to an operator that broker is down, not gone.
    """
    names = set(listed)
    return {n: a for n, a in sorted(known.items()) if n not in names}

"""The group's retry backlog and dead letters, with how old they are."""

from __future__ import annotations

from console.domain.walkthrough import Evidence
from console.rocketmq.errors import RocketMQError
from console.rocketmq.topics import dlq_topic, retry_topic
from console.services.walkthrough.evidence.context import (
    EvidenceContext,
    gaps_of,
    lag_text,
    queue_lines,
)
from console.services.walkthrough.evidence.titles import TITLES
from console.services.walkthrough.guided_run import show_time


async def provide(ctx: EvidenceContext) -> Evidence:
    o = await ctx.offsets()
    addrs = await ctx.addrs()
    now = ctx.now_ms()
    lines: list[str] = []
    lacks: list[str] = list(gaps_of(o))
    retry = retry_topic(ctx.group)
    spans: dict[tuple[str, str, int], int] = {}
    for broker in sorted({q.broker for q in o.retry_queues}):
        addr = addrs.get(broker)
        if addr is None:
            lacks.append(f"{broker}: no address")
            continue
        try:
            for mq, span in (
                await ctx.reader.admin.consume_time_span(addr, retry, ctx.group)
            ).items():
                if span.delay_ms > 0 and span.delay_ms < now:
                    spans[(mq.topic, mq.broker_name, mq.queue_id)] = span.delay_ms
        except RocketMQError as exc:
            lacks.append(f"{broker}: {exc}")
    for q in o.retry_queues:
        age = spans.get(q.key)
        old = f", oldest waiting {_age(age)}" if age else ""
        lines.append(f"{retry} {q.broker}/{q.queue_id}: {lag_text(q.lag, False)} waiting{old}")
    if not o.retry_queues:
        lines.append(f"{retry}: nothing committed or nothing there")
    dlq = await ctx.reader.dlq_queues(ctx.group)
    dlq_total = sum(s.max_offset - s.min_offset for s in dlq.queues)
    for broker in dlq.unreachable:
        lacks.append(f"{dlq_topic(ctx.group)} on {broker}: no answer")
    for stats in dlq.queues:
        mq = stats.queue
        addr = addrs.get(mq.broker_name)
        oldest = None
        if addr is not None and stats.max_offset > stats.min_offset:
            try:
                oldest = await ctx.reader.admin.earliest_store_time(addr, mq.topic, mq.queue_id)
            except RocketMQError as exc:
                lacks.append(f"{mq.topic} {mq.broker_name}/{mq.queue_id}: {exc}")
        when = ""
        if oldest and stats.last_update_timestamp:
            when = f", stored {show_time(oldest)} .. {show_time(stats.last_update_timestamp)}"
        lines.append(
            f"{mq.topic} {mq.broker_name}/{mq.queue_id}: "
            f"{stats.max_offset - stats.min_offset:,} message(s){when}"
        )
    if dlq_total:
        lines.append(
            "dead letters are not replayed by moving offsets (nothing consumes the DLQ): "
            "re-send them, e.g. mqadmin queryMsgById -i MSGID -g GROUP -d CLIENTID"
        )
    return Evidence(
        "retry-backlog",
        TITLES["retry-backlog"],
        tuple(queue_lines(lines)),
        {"retry_topic": retry, "retry_lag": o.retry_backlog, "dlq_messages": dlq_total},
        tuple(lacks),
    )


def _age(ms: int) -> str:
    s = ms // 1000
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"

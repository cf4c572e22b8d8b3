"""A plan's content hash, and its totals per topic: what the plan job computes with Spark, computed
again here in plain Python so that an apply checks a plan's rows without a Spark session."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from console.domain.plan import PlanRow, Totals

# A two-level SHA-256 that the plan job computes with Spark aggregates and that this module
# recomputes in plain Python, so an apply can check a plan's rows without a Spark session:
#   leaf   = sha256(group US topic US broker US queue_id US current US target), null as ""
#   topic  = sha256(concatenated leaf hex digests, rows ordered by (broker, queue_id))
#   root   = sha256(cluster LF, then "group US topic US topic-digest" lines ordered by group, topic)
SEP = "\x1f"


def leaf_digest(
    group: str, topic: str, broker: str, queue_id: int, current: int | None, target: int | None
) -> str:
    fields = (group, topic, broker, str(queue_id), _s(current), _s(target))
    return hashlib.sha256(SEP.join(fields).encode()).hexdigest()


def root_digest(cluster: str, topic_digests: Mapping[tuple[str, str], str]) -> str:
    lines = [f"{g}{SEP}{t}{SEP}{d}" for (g, t), d in sorted(topic_digests.items())]
    return "sha256:" + hashlib.sha256((cluster + "\n" + "\n".join(lines)).encode()).hexdigest()


def content_hash(cluster: str, rows: Iterable[PlanRow]) -> str:
    return root_digest(cluster, {key: d for key, (_, d) in topic_totals(rows).items()})


def topic_totals(rows: Iterable[PlanRow]) -> dict[tuple[str, str], tuple[Totals, str]]:
    """Per (group, topic): the totals and the topic digest of the content hash; the plan job
    computes the same with Spark for plans too big to add up in one process."""
    by_topic: dict[tuple[str, str], list[PlanRow]] = {}
    for r in rows:
        by_topic.setdefault((r.group, r.topic), []).append(r)
    out: dict[tuple[str, str], tuple[Totals, str]] = {}
    for (group, topic), mine in by_topic.items():
        leaves = sorted(
            (
                r.broker,
                r.queue_id,
                leaf_digest(group, topic, r.broker, r.queue_id, r.current, r.target),
            )
            for r in mine
        )
        digest = hashlib.sha256("".join(leaf for *_, leaf in leaves).encode()).hexdigest()
        deltas = [r.delta for r in mine if r.delta is not None]
        totals = Totals(
            group=group,
            topic=topic,
            queues=len(mine),
            changed=sum(1 for r in mine if r.changed),
            re_consume=sum(-d for d in deltas if d < 0),
            skip=sum(d for d in deltas if d > 0),
            warned=sum(1 for r in mine if r.warnings),
            lag_before=sum(r.max_offset - r.current for r in mine if r.current is not None),
            lag_after=sum(r.max_offset - r.target for r in mine if r.target is not None),
        )
        out[(group, topic)] = (totals, digest)
    return out


def _s(value: int | None) -> str:
    return "" if value is None else str(value)

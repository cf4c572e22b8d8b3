"""What the brokers' own metrics say a POP group popped and did not ack.

A 5.x broker with `metricsExporterType=PROM` serves its metrics for Prometheus over HTTP
(`metricsPromExporterPort`, 5557 by default). Among them `rocketmq_consumer_inflight_messages`
(ConsumerLagCalculator): per group and topic, for a group the broker takes as POP, the messages
popped and not acked (its PopInflightMessageCounter), which no admin request answers.

Seen on 5.3.3: the broker takes a group as POP only when it knows no remoting client of it (a
gRPC group, whose clients talk to a proxy: the broker learns of the group from the pops). A
remoting client in POP mode heartbeats as a push consumer, and for its group the metric says 0
whatever it popped. So the metric is a source for a group with gRPC clients only, and only
where the brokers list no remoting client of it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass

INFLIGHT = "rocketmq_consumer_inflight_messages"
SOURCE = f"brokers' metrics ({INFLIGHT})"
_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)\{(?P<labels>.*)\}\s+(?P<value>\S+)")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


class MetricsUnavailable(Exception):
    """A metrics endpoint that did not answer, or not with metrics."""


@dataclass(frozen=True, slots=True)
class Inflight:
    """One sample of INFLIGHT: a broker (`node_id`), a group's topic (or its POP retry)."""

    broker: str
    group: str
    topic: str
    retry: bool
    messages: int


def parse_inflight(text: str) -> list[Inflight]:
    """The INFLIGHT samples of a Prometheus text exposition; other metrics are skipped."""
    out = []
    for line in text.splitlines():
        if not line.startswith(INFLIGHT):
            continue
        match = _LINE.match(line)
        if match is None or match["name"] != INFLIGHT:
            continue
        labels = {m["key"]: m["value"] for m in _LABEL.finditer(match["labels"])}
        try:
            value = int(float(match["value"]))
        except ValueError:
            continue
        if {"node_id", "consumer_group", "topic"} <= labels.keys():
            out.append(
                Inflight(
                    broker=labels["node_id"],
                    group=labels["consumer_group"],
                    topic=labels["topic"],
                    retry=labels.get("is_retry") == "true",
                    messages=value,
                )
            )
    return out


async def scrape(url: str, timeout: float) -> list[Inflight]:
    """GET one metrics endpoint (off the event loop) and keep its INFLIGHT samples."""

    # deferred: urllib's HTTP client (http.client, email), for a cluster with metrics only
    import urllib.error
    import urllib.request

    def get() -> str:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310
                body: bytes = resp.read()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise MetricsUnavailable(f"{url}: {exc}") from exc
        return body.decode("utf-8", errors="replace")

    return parse_inflight(await asyncio.to_thread(get))


def in_flight_by_broker(
    samples: Iterable[Inflight], group: str, topics: Iterable[str]
) -> dict[str, dict[str, int]]:
    """broker -> topic -> messages popped and not acked (its POP retry included), for `group`
    on `topics`, from every broker that exported any sample (0 where it had none of these)."""
    wanted = set(topics)
    out: dict[str, dict[str, int]] = {}
    for s in samples:
        # The broker answered: what it does not list for the group is 0.
        topics_of = out.setdefault(s.broker, {})
        if s.group == group and s.topic in wanted:
            topics_of[s.topic] = topics_of.get(s.topic, 0) + s.messages
    return out

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

Also seen on 5.3.3 (two brokers behind a proxy, SimpleConsumers of the official gRPC client
holding 80 messages, 40 on each broker, read at once and every few seconds for three minutes:
80 every time, complete):

- the gauge is computed at every scrape (each sample's timestamp is the scrape's): there is no
  export interval to wait for, and a broker lists a gRPC group from its first pop there on;
- a group the broker takes as POP has two samples per topic, `is_retry="false"` and
  `is_retry="true"` (its POP retry topic, labelled with the topic's name), each labelled
  `consumer_group`, `topic`, `node_id` (the broker's name), `cluster`, `node_type="broker"`,
  `is_system="false"`; a group it takes as push has the first only (`pops_on`);
- the broker lists the group still once its clients are gone (a stopped SimpleConsumer's
  messages stay popped and unacked until revived), and stops 10 minutes after its last pop
  there (`subscriptionExpiredTimeout`: it forgets a group it learnt of from pops; seen gone
  between 9.5 and 10.3 minutes after the client stopped); its other metrics of the group
  (`rocketmq_pop_revive_in_message_total`, counters) stay until it restarts;
- the counter is kept in memory only (PopInflightMessageCounter, read in 5.3.3's code, not
  seen): messages popped before the broker started are not in it.

So a broker whose metrics answer but list no sample of the group on a topic it holds offsets
of says nothing of it: unknown, not 0. A value that is not a count (`NaN`, `+Inf`) is unknown
too. "Total lag 40, partial" for 80 held came from `--broker-metrics URL_A --broker-metrics
URL_B`: the option kept the last URL only (console.cli.arguments now keeps both), and broker-a's
part was named unknown.
"""

from __future__ import annotations

import asyncio
import math
import re
import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field

from console.rocketmq.errors import TlsCause
from console.rocketmq.reach import DIRECT, Reach
from console.rocketmq.tls import TlsClient, handshake_refused

INFLIGHT = "rocketmq_consumer_inflight_messages"
SOURCE = f"brokers' metrics ({INFLIGHT})"
#: How long a 5.3.3 broker keeps listing a group it learnt of from pops (its
#: subscriptionExpiredTimeout), in the words of the gaps.
FORGETS = "a broker lists a gRPC group until 10 minutes after its last pop there"
_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)\{(?P<labels>.*)\}\s+(?P<value>\S+)")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


class MetricsUnavailable(Exception):
    """A metrics endpoint that did not answer, or not with metrics. `tls`: our TLS was refused
    (a certificate not trusted, a name it does not hold): a configuration problem."""

    def __init__(self, text: str, *, tls: bool = False) -> None:
        super().__init__(text)
        self.tls = tls


@dataclass(frozen=True, slots=True)
class Inflight:
    """One sample of INFLIGHT: a broker (`node_id`), a group's topic (or its POP retry).
    `messages` is None when the value is not a count (`NaN`, `+Inf`, below 0): `value` is what
    the broker said."""

    broker: str
    group: str
    topic: str
    retry: bool
    messages: int | None
    value: str = ""


def count_of(text: str) -> int | None:
    """A sample's value as a count of messages; None for anything else."""
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0 or not value.is_integer():
        return None
    return int(value)


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
        if {"node_id", "consumer_group", "topic"} <= labels.keys():
            out.append(
                Inflight(
                    broker=labels["node_id"],
                    group=labels["consumer_group"],
                    topic=labels["topic"],
                    retry=labels.get("is_retry") == "true",
                    messages=count_of(match["value"]),
                    value=match["value"],
                )
            )
    return out


async def scrape(
    url: str, timeout: float, tls: TlsClient | None = None, reach: Reach = DIRECT
) -> list[Inflight]:
    """GET one metrics endpoint (off the event loop) and keep its INFLIGHT samples. An
    `https://` endpoint is verified with the cluster's TLS context (`tls`, built from its
    `tls:`; None: the system CAs). The connection goes where `reach` sends the endpoint's
    address (mapped, through SOCKS), its URL unchanged."""

    # deferred: urllib's HTTP client (http.client, email), for a cluster with metrics only
    import urllib.error
    import urllib.parse
    import urllib.request

    context = tls.context if tls is not None and url.startswith("https://") else None
    where = urllib.parse.urlsplit(url)
    port = where.port or (443 if where.scheme == "https" else 80)
    route = reach.route(f"{where.hostname}:{port}")
    named = f"{url} ({route})" if route else url

    def get() -> str:
        try:
            if reach.direct:
                opened = urllib.request.urlopen(url, timeout=timeout, context=context)  # noqa: S310
            else:
                # deferred: the reached opener, for a cluster reached through a map or SOCKS
                from console.services.infra.reached_http import reached_opener

                opened = reached_opener(reach, context).open(url, timeout=timeout)
            with opened as resp:
                body: bytes = resp.read()
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, ssl.SSLError):
                raise _tls_refused(url, exc.reason, tls) from exc
            raise MetricsUnavailable(f"{named}: {exc}") from exc
        except ssl.SSLError as exc:
            raise _tls_refused(url, exc, tls) from exc
        except (OSError, ValueError) as exc:
            raise MetricsUnavailable(f"{named}: {exc}") from exc
        return body.decode("utf-8", errors="replace")

    return parse_inflight(await asyncio.to_thread(get))


def _tls_refused(url: str, exc: ssl.SSLError, tls: TlsClient | None) -> MetricsUnavailable:
    """What a failed handshake with a metrics endpoint means, in the words the wire client
    uses for a broker's (console.rocketmq.tls)."""
    # deferred: urllib, loaded by scrape's HTTP client
    import urllib.parse

    where = urllib.parse.urlsplit(url)
    host = where.hostname or where.netloc
    if isinstance(exc, ssl.SSLCertVerificationError):
        refused = handshake_refused(
            where.netloc, exc, tls or TlsClient(ssl.create_default_context()), host
        )
        if refused.cause is TlsCause.NAME_MISMATCH:
            # The URL's host is what is checked here (`tls.server_name` is the wire's only).
            return MetricsUnavailable(
                f"{url}: TLS certificate is not valid for {host} (name mismatch): name the "
                "endpoint by a host the certificate holds",
                tls=True,
            )
        return MetricsUnavailable(f"{url}: {refused}", tls=True)
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return MetricsUnavailable(f"{url}: TLS failed: {detail}", tls=True)


@dataclass(slots=True)
class BrokerInflight:
    """What one broker's metrics say of a group: messages popped and not acked per topic (its
    POP retry included), the topics it lists no sample of the group for, and those whose
    sample is not a count (topic -> the value said)."""

    counted: dict[str, int] = field(default_factory=dict)
    unlisted: list[str] = field(default_factory=list)
    not_counts: dict[str, str] = field(default_factory=dict)


def in_flight_by_broker(
    samples: Iterable[Inflight], group: str, topics: Iterable[str]
) -> dict[str, BrokerInflight]:
    """broker -> what its metrics say of `group` on `topics`, for every broker that exported
    any sample. A topic the broker lists no sample of the group for is `unlisted` (a broker
    that no longer takes the group as POP says nothing of it, see above), not 0."""
    wanted = set(topics)
    listed: dict[str, dict[str, list[Inflight]]] = {}
    for s in samples:
        of_broker = listed.setdefault(s.broker, {})
        if s.group == group and s.topic in wanted:
            of_broker.setdefault(s.topic, []).append(s)
    out: dict[str, BrokerInflight] = {}
    for broker, by_topic in listed.items():
        said = out[broker] = BrokerInflight()
        for topic in sorted(wanted):
            found = by_topic.get(topic)
            if not found:
                said.unlisted.append(topic)
                continue
            odd = [s.value for s in found if s.messages is None]
            if odd:
                said.not_counts[topic] = odd[0]
            else:
                said.counted[topic] = sum(s.messages or 0 for s in found)
    return out


def pops_on(samples: Iterable[Inflight], group: str) -> set[str]:
    """The brokers that take `group` as POP: they list a sample of its POP retry topic, which
    a 5.3.3 broker exports for a POP group only (even one whose clients are all gone, until it
    forgets the group)."""
    return {s.broker for s in samples if s.group == group and s.retry}

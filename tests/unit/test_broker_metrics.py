"""The brokers' metrics as a source of what a gRPC group popped and did not ack
(console.services.read.broker_metrics): a value that is not a count is unknown, never a crash
and never 0; an `https://` endpoint is verified with the cluster's `tls.ca`, and a certificate
it refuses is named."""

from __future__ import annotations

import contextlib
import http.server
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from console.config import TlsRef
from console.sandbox.certs import issue, new_authority, write_cert, write_pair
from console.services.read.broker_metrics import (
    MetricsUnavailable,
    in_flight_by_broker,
    parse_inflight,
    scrape,
)

LABELS = (
    'cluster="C",consumer_group="g",is_system="false",node_id="{broker}",node_type="broker",'
    'topic="clicks",is_retry="{retry}"'
)


def sample(broker: str, value: str, retry: str = "false") -> str:
    labels = LABELS.format(broker=broker, retry=retry)
    return f"rocketmq_consumer_inflight_messages{{{labels}}} {value} 1795654079887\n"


@pytest.mark.parametrize("value", ["+Inf", "-Inf", "NaN", "Inf", "-3.0", "2.5"])
def test_a_value_that_is_not_a_count_is_unknown_not_a_crash(value: str) -> None:
    (s,) = parse_inflight(sample("broker-a", value))
    assert (s.messages, s.value) == (None, value)
    (said,) = in_flight_by_broker([s], "g", ["clicks"]).values()
    # Not 0, not left out: that broker's in-flight of the topic is unknown, with what it said.
    assert (said.counted, said.not_counts) == ({}, {"clicks": value})


def test_a_count_and_its_pop_retry_are_summed() -> None:
    text = sample("broker-a", "24.0") + sample("broker-a", "1.0", retry="true")
    (said,) = in_flight_by_broker(parse_inflight(text), "g", ["clicks"]).values()
    assert (said.counted, said.unlisted, said.not_counts) == ({"clicks": 25}, [], {})
    # One sample of the topic that is not a count makes the whole topic unknown.
    text += sample("broker-a", "NaN", retry="true")
    (said,) = in_flight_by_broker(parse_inflight(text), "g", ["clicks"]).values()
    assert (said.counted, said.not_counts) == ({}, {"clicks": "NaN"})


class Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = sample("broker-a", "24.0").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # no request lines on the test's stderr


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    ca: Path  # the CA that signed its certificate


@contextlib.contextmanager
def https_endpoint(directory: Path, *, dns: tuple[str, ...]) -> Iterator[Endpoint]:
    """A metrics endpoint on 127.0.0.1 over TLS, its certificate (for 127.0.0.1 and `dns`)
    signed by a CA of the test's own."""
    ca = new_authority()
    pair = write_pair(issue(ca, "metrics", dns=dns), directory, "metrics")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pair.cert, pair.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        url = f"https://127.0.0.1:{server.server_address[1]}/metrics"
        yield Endpoint(url, write_cert(ca.cert, directory / "ca.pem"))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def https_metrics(tmp_path: Path) -> Iterator[Endpoint]:
    with https_endpoint(tmp_path, dns=("localhost",)) as endpoint:
        yield endpoint


async def test_an_https_endpoint_is_verified_with_the_clusters_ca(
    https_metrics: Endpoint,
) -> None:
    tls = TlsRef(ca=str(https_metrics.ca)).resolve()
    (s,) = await scrape(https_metrics.url, 5.0, tls)
    assert (s.broker, s.messages) == ("broker-a", 24)


async def test_a_certificate_the_client_does_not_trust_is_named(https_metrics: Endpoint) -> None:
    # The system CAs (no `tls:`, or a `tls.ca` of another CA) do not know the test's CA.
    url = https_metrics.url
    with pytest.raises(MetricsUnavailable) as refused:
        await scrape(url, 5.0)
    assert refused.value.tls
    text = str(refused.value)
    assert text.startswith(f"{url}: 127.0.0.1:")
    assert "TLS certificate for 127.0.0.1 not trusted (unknown CA" in text
    assert "set `tls.ca` to the CA file that signed the cluster's certificates" in text


async def test_a_certificate_for_another_host_is_named(tmp_path: Path) -> None:
    with https_endpoint(tmp_path, dns=()) as endpoint:
        url = endpoint.url.replace("127.0.0.1", "localhost")
        tls = TlsRef(ca=str(endpoint.ca)).resolve()
        with pytest.raises(MetricsUnavailable) as refused:
            await scrape(url, 5.0, tls)
    assert refused.value.tls
    assert str(refused.value) == (
        f"{url}: TLS certificate is not valid for localhost (name mismatch): name the endpoint "
        "by a host the certificate holds"
    )

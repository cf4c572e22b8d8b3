"""The network process behind the real source: every operation of the protocol served, typed
errors across the pipe, progress, cancel, close."""

from __future__ import annotations

import asyncio
import inspect
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from console.config import ClusterConfig, Config
from console.domain.boundary_messages import Boundary, BoundaryRequest
from console.remote.proxy import RemoteSource, remote_source, remote_sources
from console.rocketmq.codes import RequestCode
from console.rocketmq.errors import ConnectError, RequestTimeout, RocketMQError
from console.services.infra.rpc import ChildExited, RemoteError
from console.services.read.reader_source import ReaderSource
from console.services.read.source import OPERATIONS, ClusterOperations, ClusterSource

#: Arguments for each operation of the protocol: a new operation needs a line here, and is
#: then checked to be served by the network process like the others.
SAMPLE_ARGS: dict[str, tuple[Any, ...]] = {
    "brokers": (),
    "name_server_notices": (),
    "topics": (),
    "topic_queues": ("orders",),
    "groups": (),
    "group_offsets": ("g1",),
    "read_groups": (["g1", "g2"],),
    "read_delays": ({"g1": {"broker-a": ["orders"]}},),
    "consume_delays": ("g1", {"broker-a": ["orders"]}),
    "dlq_queues": ("g1",),
    "assignments": ("g1", ["10.0.0.5@1"]),
    "boundary_messages": ([BoundaryRequest("orders", "broker-a", 0, 5, 9)],),
}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def unreachable() -> ClusterConfig:
    return ClusterConfig("nowhere", (f"127.0.0.1:{_closed_port()}",))


@pytest.fixture
def silent() -> Iterator[str]:
    """A "name server" that accepts connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_the_protocol_lists_the_operations_the_backend_and_proxy_have() -> None:
    assert set(SAMPLE_ARGS) == set(OPERATIONS)
    assert len(OPERATIONS) == 12
    for name, op in OPERATIONS.items():
        served = inspect.signature(getattr(ReaderSource, name))
        assert list(served.parameters) == list(op.signature.parameters), name
        assert inspect.iscoroutinefunction(getattr(RemoteSource, name)), name
        assert getattr(RemoteSource, name).__doc__ == op.doc
    assert [op.name for op in OPERATIONS.values() if op.reports_progress] == [
        "read_groups",
        "read_delays",
    ]
    assert [op.name for op in OPERATIONS.values() if op.hands_parts] == ["read_groups"]
    assert "close" not in OPERATIONS
    assert hasattr(ClusterSource, "close")
    assert not hasattr(ClusterOperations, "close")


async def test_every_operation_round_trips_through_the_network_process(
    unreachable: ClusterConfig,
) -> None:
    """Each operation reaches the backend in the child (no "no such operation") and its answer
    or its typed error comes back: here every one meets a name server that is not there."""
    source = remote_source(unreachable, Config(timeout=1.0))
    try:
        answers = {
            name: (await asyncio.gather(getattr(source, name)(*args), return_exceptions=True))[0]
            for name, args in SAMPLE_ARGS.items()
        }
    finally:
        source.close()
    # The batch reads answer per group, each group's error as a value.
    per_group = {"read_groups": {"g1", "g2"}, "read_delays": {"g1"}}
    # Name servers that do not answer are told as lines, not raised.
    notices = answers.pop("name_server_notices")
    assert isinstance(notices, tuple), notices
    assert all(isinstance(n, str) for n in notices)
    # Boundaries answer every queue asked, each saying why its messages could not be read.
    (boundary,) = answers.pop("boundary_messages")
    assert isinstance(boundary, Boundary), boundary
    assert boundary.unread
    assert unreachable.namesrv[0] in (boundary.first_note or "")
    for name, answer in answers.items():
        if name in per_group:
            assert isinstance(answer, dict), name
            assert set(answer) == per_group[name]
            errors = list(answer.values())
        else:
            errors = [answer]
        for error in errors:
            assert isinstance(error, ConnectError), (name, error)
            assert error.addr == unreachable.namesrv[0], name


async def test_a_failure_in_the_network_process_reaches_the_caller_typed(
    unreachable: ClusterConfig,
) -> None:
    source = remote_source(unreachable, Config(timeout=1.0))
    try:
        with pytest.raises(ConnectError, match="cannot connect to 127.0.0.1") as raised:
            await source.brokers()
        assert raised.value.addr == unreachable.namesrv[0]
        answer = await source.read_groups(["g1", "g2"])
        assert set(answer) == {"g1", "g2"}
        assert all(isinstance(v, ConnectError) for v in answer.values())
    finally:
        source.close()


async def test_a_timeout_crosses_with_its_address_request_and_seconds(silent: str) -> None:
    source = remote_source(ClusterConfig("silent", (silent,)), Config(timeout=0.5))
    try:
        with pytest.raises(RequestTimeout) as raised:
            await source.topics()
    finally:
        source.close()
    assert raised.value.addr == silent
    assert raised.value.code in (
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.GET_TOPICS_BY_CLUSTER,
    )
    assert raised.value.timeout == 0.5


async def test_a_bug_in_the_network_process_crosses_as_its_kind_and_text(
    unreachable: ClusterConfig,
) -> None:
    source = RemoteSource(unreachable, Config(timeout=1.0))
    try:
        with pytest.raises(RemoteError) as raised:
            await source.call("group_offsets")  # a missing argument: a TypeError over there
        assert raised.value.kind == "TypeError"
        assert isinstance(raised.value, RocketMQError)  # the screens treat it as before
    finally:
        source.close()


async def test_progress_of_a_batch_read_crosses_the_pipe(unreachable: ClusterConfig) -> None:
    source = remote_source(unreachable, Config(timeout=1.0))
    seen: list[tuple[int, int]] = []
    try:
        await source.read_groups(["g1", "g2", "g3"], lambda done, total: seen.append((done, total)))
    finally:
        source.close()
    assert seen[0] == (0, 3)
    assert seen[-1] == (3, 3)


async def test_a_cancelled_call_leaves_the_process_serving(unreachable: ClusterConfig) -> None:
    source = remote_source(unreachable, Config(timeout=5.0))
    try:
        call = asyncio.ensure_future(source.groups())
        await asyncio.sleep(0)  # let the call go out before cancelling it
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        with pytest.raises(ConnectError):
            await source.topics()
    finally:
        source.close()


async def test_closed_source_reports_instead_of_hanging(unreachable: ClusterConfig) -> None:
    connect = remote_sources(Config(timeout=1.0), warm=unreachable)
    source = connect(unreachable)
    source.close()
    with pytest.raises(ChildExited, match="network process exited"):
        await source.brokers()

"""The console's network process against the real sandbox: every operation of the protocol
answers what the backend answers in-process, and the broker's errors reach the UI process by
type, code and address."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from console.config import ClusterConfig, Config
from console.domain.boundary_messages import BoundaryRequest
from console.remote.proxy import remote_source
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import RequestCode, ResponseCode
from console.rocketmq.errors import BrokerError, NotFoundError
from console.rocketmq.topics import dlq_topic
from console.sandbox import scenario
from console.services.read.reader_source import ReaderSource
from console.services.read.source import OPERATIONS, ClusterSource

pytestmark = pytest.mark.integration

#: Static after the seed: the same answer twice, in and out of process.
STATIC_GROUP = scenario.GROUP_DLQ


@pytest.fixture
def cluster(sandbox: Any) -> ClusterConfig:
    config: ClusterConfig = sandbox.cluster_config("sandbox")  # its `tls:` too, if any
    return config


@pytest.fixture
async def source(cluster: ClusterConfig) -> AsyncIterator[ClusterSource]:
    remote = remote_source(cluster, Config(clusters=(cluster,), timeout=5.0))
    yield remote
    remote.close()


@pytest.fixture
async def backend(cluster: ClusterConfig) -> AsyncIterator[ReaderSource]:
    local = ReaderSource(cluster, Config(clusters=(cluster,), timeout=5.0))
    yield local
    await local.close()


async def test_every_operation_answers_as_the_backend_does(
    source: ClusterSource, backend: ReaderSource
) -> None:
    brokers = {"broker-a": [scenario.TOPIC_PAYMENTS], "broker-b": [scenario.TOPIC_PAYMENTS]}
    live = await backend.group_offsets(scenario.GROUP_LIVE)
    assert live.clients, "the sandbox's live consumers are online"
    args: dict[str, tuple[Any, ...]] = {
        "brokers": (),
        "name_server_notices": (),
        "topics": (),
        "topic_queues": (scenario.TOPIC_AUDIT,),
        "groups": (),
        "group_offsets": (STATIC_GROUP,),
        "read_groups": ([STATIC_GROUP, scenario.GROUP_CAUGHT_UP],),
        "read_delays": ({scenario.GROUP_OFFLINE: brokers},),
        "consume_delays": (scenario.GROUP_OFFLINE, brokers),
        "dlq_queues": (STATIC_GROUP,),
        "assignments": (scenario.GROUP_LIVE, [c.client_id for c in live.clients]),
        "boundary_messages": ([BoundaryRequest(scenario.TOPIC_PAYMENTS, "broker-a", 0, 0, 1)],),
    }
    assert set(args) == set(OPERATIONS)
    for name, call_args in args.items():
        remote = await getattr(source, name)(*call_args)
        local = await getattr(backend, name)(*call_args)
        assert type(remote) is type(local), name
        assert comparable(name, remote) == comparable(name, local), name


def comparable(name: str, answer: Any) -> Any:
    """What does not change between two reads a moment apart (the time of a reading, a
    broker's message counters and delays in ms do)."""
    if name == "brokers":
        return [(b.name, b.addr, b.up, b.version) for b in answer]
    if name == "group_offsets":
        return [(q.key, q.committed, q.min_offset) for q in answer.queues], answer.dlq_messages
    if name == "read_groups":
        return {
            g: type(o).__name__ if isinstance(o, Exception) else comparable("group_offsets", o)
            for g, o in answer.items()
        }
    if name in ("consume_delays", "assignments"):
        return sorted(answer)  # the queues, not the milliseconds or who holds them now
    if name == "read_delays":
        return {g: sorted(d) for g, d in answer.items()}
    return answer


async def test_a_refresh_taken_in_parts_holds_every_group_once_as_read_in_process(
    source: ClusterSource, backend: ReaderSource
) -> None:
    """What the group list does: the reads handed over as they come, the answer holding what
    no part carried (here none); together, the same groups and offsets as read in process."""
    names = [STATIC_GROUP, scenario.GROUP_CAUGHT_UP, dlq_topic(STATIC_GROUP), "no-such-group"]
    parts: list[dict[str, Any]] = []
    answer = await source.read_groups(names, None, lambda part: parts.append(dict(part)))
    handed = [name for part in parts for name in part]
    assert answer == {}
    assert sorted(handed) == sorted(names)  # each once, the one that fails too
    whole = {name: read for part in parts for name, read in part.items()}
    assert isinstance(whole["no-such-group"], Exception)
    local = await backend.read_groups(names)
    assert comparable("read_groups", whole) == comparable("read_groups", local)


async def test_a_broker_error_crosses_with_its_code_and_address(
    source: ClusterSource, cluster: ClusterConfig
) -> None:
    with pytest.raises(BrokerError) as raised:
        await source.topic_queues("it-no-such-topic")
    assert raised.value.code == ResponseCode.TOPIC_NOT_EXIST
    assert raised.value.request_code == RequestCode.GET_ROUTEINFO_BY_TOPIC
    assert raised.value.addr == cluster.namesrv[0]


async def test_a_group_that_is_not_there_crosses_as_not_found(source: ClusterSource) -> None:
    with pytest.raises(NotFoundError, match="it-no-such-group"):
        await source.group_offsets("it-no-such-group")


async def test_one_dlq_reader_counts_the_group_and_lists_its_queues(
    source: ClusterSource,
) -> None:
    offsets = await source.group_offsets(STATIC_GROUP)
    queues = await source.dlq_queues(STATIC_GROUP)
    assert queues
    assert {q.queue.topic for q in queues} == {dlq_topic(STATIC_GROUP)}
    assert offsets.dlq_messages == sum(q.max_offset - q.min_offset for q in queues) > 0
    assert await source.dlq_queues(scenario.GROUP_CAUGHT_UP) == []


async def test_a_broker_that_does_not_answer_is_named_not_read_as_empty(sandbox: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        gone = f"127.0.0.1:{s.getsockname()[1]}"  # closed once the block ends
    async with AdminClient(sandbox.namesrv_addr, timeout=2) as admin:
        reader = sandbox.reader(admin)
        masters = await reader.brokers()
        answered = await reader.dlq_queues(STATIC_GROUP)
        partly = await reader.dlq_queues(STATIC_GROUP, brokers={**masters, "broker-gone": gone})
        topic = await reader.topic_queues(scenario.TOPIC_AUDIT)
    assert answered.unreachable == ()
    assert answered.queues
    assert partly.unreachable == ("broker-gone",)
    assert partly.queues == answered.queues
    assert topic.unreachable == ()
    assert {q.queue.broker_name for q in topic.queues} == set(masters)

"""The messages at the boundary of a reset against the real brokers, and against what the
official `mqadmin queryMsgByOffset` prints for the same queue and offset.

- seeded queues (a replay, a skip: its first and last skipped message, a queue with nothing
  committed) and messages of our own (zlib and zstd compressed bodies, a binary body): every
  field we show equals mqadmin's, the body's head is the head of the body mqadmin wrote out;
- the queue's end, beyond it, and messages really deleted (the 4.9.7 broker's expired commit
  log) are shown as such, as mqadmin finds no message there either;
- a broker that does not answer (its JVM paused) is named, and the other broker is read;
  `rmq-console message` exits 1 for it and 0 for a message read.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
import zstandard

from console.cli import main
from console.domain.boundary_messages import (
    CLIENT_PROPERTIES,
    Absence,
    Boundary,
    BoundaryRequest,
    MessageView,
    body_head,
)
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import RequestCode
from console.sandbox import legacy as lg
from console.sandbox import scenario
from console.sandbox.errors import MqadminError
from console.sandbox.legacy import LegacySandbox
from console.sandbox.mqadmin_oracle import QueriedMessage
from console.sandbox.runner import Sandbox
from console.sandbox.seed import wait_for_routes
from console.services.read.boundary import read_boundaries
from console.services.read.reader import ClusterReader
from tests.integration.faults import broker_answers

OWN_TOPIC = "it-boundary-bodies"  # our own messages: the seeded topics keep their counts
PAYMENTS = scenario.TOPIC_PAYMENTS  # stable after the seed
AUDIT = scenario.TOPIC_AUDIT
DOWN = "broker-b"
ZLIB = 0x1 | (0x3 << 8)
ZSTD = 0x1 | (0x2 << 8)
#: Over the Java producer's 4 KiB compression threshold, printable, no spaces at the ends.
LZ4_BODY = '{"order": 8, "lines": [' + ", ".join(['"' + "b" * 40 + '"'] * 120) + "]}"
#: mqadmin JVMs at once (each a few seconds of one core).
MQADMIN_AT_ONCE = 3


async def send_raw(admin: AdminClient, addr: str, body: bytes, sys_flag: int, tags: str) -> int:
    """A message sent as a producer that compressed its body itself would send it."""
    resp = await admin.call(
        addr,
        RequestCode.SEND_MESSAGE,
        {
            "producerGroup": "it-boundary",
            "topic": OWN_TOPIC,
            "defaultTopic": "TBW102",
            "defaultTopicQueueNums": 1,
            "queueId": 0,
            "sysFlag": sys_flag,
            "bornTimestamp": int(time.time() * 1000),
            "flag": 0,
            "properties": f"TAGS\x01{tags}\x02KEYS\x01{tags}-key\x02",
            "reconsumeTimes": 0,
            "unitMode": False,
            "batch": False,
        },
        body,
    )
    return int(resp.ext_fields["queueOffset"])


async def own_messages(sandbox: Sandbox, admin: AdminClient, addr: str) -> dict[str, int]:
    """Offsets of a zlib, a zstd, a binary and an LZ4 message in OWN_TOPIC, once the broker
    serves them (a message is pullable a moment after its send is acknowledged). The LZ4 one
    is the Java producer's own: mqadmin's, told to compress with LZ4 a body over 4 KiB."""
    await admin.create_topic(addr, OWN_TOPIC, read_queues=1, write_queues=1)
    await wait_for_routes(admin, [OWN_TOPIC], {"broker-a"})
    text = json.dumps({"order": 7, "lines": ["a" * 30] * 20}).encode()
    offsets = {
        "zlib": await send_raw(admin, addr, zlib.compress(text), ZLIB, "zlib"),
        "zstd": await send_raw(
            admin, addr, zstandard.ZstdCompressor().compress(text), ZSTD, "zstd"
        ),
        "binary": await send_raw(admin, addr, bytes(range(200)), 0, "binary"),
    }
    # The topic's one queue is ours alone: the next message takes the next offset.
    for attempt in range(1, 4):
        try:
            await sandbox.mqadmin.send_message(
                OWN_TOPIC,
                LZ4_BODY,
                broker_name="broker-a",
                queue_id=0,
                tags="lz4",
                keys="lz4-key",
                compress_type="LZ4",
            )
            break
        except MqadminError as exc:
            # mqadmin's producer waits 3 s for the broker, which a loaded machine exceeds. A
            # send that timed out may still have been stored: then the next offset holds this
            # message either way, and a second copy after it is not looked at.
            if "RemotingTimeoutException" not in str(exc) or attempt == 3:
                raise
    offsets["lz4"] = offsets["binary"] + 1
    deadline = time.monotonic() + 30
    while await admin.max_offset(addr, OWN_TOPIC, 0) <= max(offsets.values()):
        assert time.monotonic() < deadline, "the broker did not serve the messages sent"
        await asyncio.sleep(0.1)
    return offsets


def same_as_mqadmin(ours: MessageView, theirs: QueriedMessage | None) -> None:
    where = f"{ours.topic}/{ours.broker}/{ours.queue_id}@{ours.queue_offset}"
    assert theirs is not None, f"mqadmin found no message at {where}"
    assert ours.offset_msg_id == theirs.offset_id, where
    assert (ours.topic, ours.queue_id, ours.queue_offset) == (
        theirs.topic,
        theirs.queue_id,
        theirs.queue_offset,
    ), where
    assert ours.commit_log_offset == theirs.commit_log_offset, where
    assert (ours.tags, ours.keys) == (theirs.tags, theirs.keys), where
    assert ours.reconsume_times == theirs.reconsume_times, where
    assert (ours.store_time_ms, ours.born_time_ms) == (theirs.store_ms, theirs.born_ms), where
    assert (ours.store_host, ours.born_host) == (theirs.store_host, theirs.born_host), where
    stored = {k: v for k, v in theirs.properties.items() if k not in CLIENT_PROPERTIES}
    assert ours.properties_dict == stored, where
    assert ours.msg_id == theirs.properties.get("UNIQ_KEY"), where
    assert theirs.body is not None
    assert ours.size == len(theirs.body), where
    assert (ours.body_head, ours.body_binary, ours.body_truncated) == body_head(theirs.body), where


async def test_boundary_messages_are_what_mqadmin_prints(sandbox: Sandbox) -> None:
    async with sandbox.admin() as admin:
        own = await own_messages(sandbox, admin, sandbox.broker_addrs["broker-a"])
        wanted = [
            BoundaryRequest(PAYMENTS, "broker-a", 2, 10, 5),  # a replay: its first message
            BoundaryRequest(PAYMENTS, "broker-b", 7, 3, 9),  # a skip: first and last skipped
            BoundaryRequest(AUDIT, "broker-b", 1, None, 4),  # nothing committed
            *(BoundaryRequest(OWN_TOPIC, "broker-a", 0, None, o) for o in own.values()),
        ]
        started = time.perf_counter()
        got = await read_boundaries(sandbox.reader(admin), wanted)
        took = time.perf_counter() - started
    shown = [(b.first, b.request.target) for b in got]
    skip = got[1]
    assert skip.last_skipped is not None
    shown.append((skip.last_skipped, 8))
    for view, offset in shown:
        assert view is not None
        assert view.queue_offset == offset
    assert got[2].last_absence is Absence.NOT_COMMITTED
    assert not any(b.unread for b in got)
    assert took < 2.0, f"{len(wanted)} boundaries took {took:.2f}s"

    gate = asyncio.Semaphore(MQADMIN_AT_ONCE)

    async def theirs(view: MessageView) -> QueriedMessage | None:
        async with gate:
            return await sandbox.mqadmin.query_msg_by_offset(
                view.topic, view.broker, view.queue_id, view.queue_offset
            )

    views = [v for v, _ in shown if v is not None]
    # A task group, not a gather: when one mqadmin fails, the others are stopped here. A gather
    # left them starting JVMs, and the loop's last cancellation, catching one while its pipes
    # connected, waited for it forever (python/cpython#125502, #103847): the stream hung.
    async with asyncio.TaskGroup() as tg:
        asked = [tg.create_task(theirs(v)) for v in views]
    for ours, task in zip(views, asked, strict=True):
        same_as_mqadmin(ours, task.result())
    by_tag = {v.tags: v for v in views if v.topic == OWN_TOPIC}
    assert (by_tag["zlib"].compression, by_tag["zstd"].compression) == ("zlib", "zstd")
    assert by_tag["zlib"].body_head.startswith('{"order": 7')
    lz4_view = by_tag["lz4"]
    assert lz4_view.compression == "lz4"
    assert lz4_view.size == len(LZ4_BODY)
    assert lz4_view.body_truncated
    assert LZ4_BODY.startswith(lz4_view.body_head)
    assert by_tag["binary"].body_binary
    assert by_tag["binary"].body_head.startswith("00 01 02 03")


async def test_the_end_and_beyond_are_said_and_mqadmin_finds_nothing_there(
    sandbox: Sandbox,
) -> None:
    addr = sandbox.broker_addrs["broker-a"]
    async with sandbox.admin() as admin:
        end = await admin.max_offset(addr, PAYMENTS, 3)
        at_end, beyond = await read_boundaries(
            sandbox.reader(admin),
            [
                BoundaryRequest(PAYMENTS, "broker-a", 3, end - 4, end),
                BoundaryRequest(PAYMENTS, "broker-a", 3, end - 4, end + 10),
            ],
        )
    assert at_end.first is None
    assert (
        at_end.first_note == f"nothing after the target: it is the queue's end (max offset {end})"
    )
    assert at_end.last_skipped is not None
    assert at_end.last_skipped.queue_offset == end - 1
    assert beyond.first_absence is Absence.BEYOND
    assert beyond.first_note == (
        f"nothing after the target: it is beyond the queue's end (max offset {end})"
    )
    assert not at_end.unread
    assert await sandbox.mqadmin.query_msg_by_offset(PAYMENTS, "broker-a", 3, end) is None


async def test_deleted_messages_are_shown_as_deleted(legacy_cluster: LegacySandbox) -> None:
    """v4-expired lost its first commit-log file: offsets below its min offset are gone."""
    async with legacy_cluster.admin() as admin:
        stats = await admin.topic_stats(legacy_cluster.broker_addr, lg.EXPIRED)
        low = min(s.min_offset for s in stats.values())
        assert low > lg.LAGGING_COMMITTED
        gone, skip_to_min = await read_boundaries(
            ClusterReader(admin),
            [
                # v4-lagging replayed from where it is: its first message is deleted
                BoundaryRequest(lg.EXPIRED, lg.LEGACY_BROKER, 0, low + 1, lg.LAGGING_COMMITTED),
                # v4-lagging skipped to the min offset: the last it skips is deleted
                BoundaryRequest(lg.EXPIRED, lg.LEGACY_BROKER, 0, lg.LAGGING_COMMITTED, low),
            ],
        )
    assert gone.first is None
    assert gone.first_note == f"deleted: below the min offset {low}"
    assert gone.first_absence is Absence.DELETED
    assert skip_to_min.last_skipped is None
    assert skip_to_min.last_note == f"deleted: below the min offset {low}"
    assert skip_to_min.first is not None
    assert skip_to_min.first.queue_offset == low
    assert skip_to_min.first.keys == (str(low),)  # the filler's key is its sequence number
    assert skip_to_min.first.size == lg.EXPIRED_BODY
    assert skip_to_min.first.body_truncated


# ---- a broker that does not answer ---------------------------------------------------------------


@pytest.fixture
def broker_paused(sandbox: Sandbox) -> Iterator[str]:
    """broker-b's JVM paused (still registered, answering nothing) for one test."""
    os.kill(sandbox.pids()[DOWN], signal.SIGSTOP)
    try:
        yield sandbox.broker_addrs[DOWN]
    finally:
        os.kill(sandbox.pids()[DOWN], signal.SIGCONT)
        deadline = time.monotonic() + 120
        addr = sandbox.broker_addrs[DOWN]
        while not asyncio.run(broker_answers(sandbox.namesrv_addr, DOWN, addr)):
            assert time.monotonic() < deadline, f"{DOWN} did not answer again within 120 s"
            time.sleep(0.5)


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"workspace": str(tmp_path / "ws")}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(path))
    return path


def test_a_broker_that_does_not_answer_is_named_and_the_other_read(
    sandbox: Sandbox, config: Path, broker_paused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def read() -> list[Boundary]:
        async with AdminClient(sandbox.namesrv_addr, timeout=1.0) as admin:
            return await read_boundaries(
                ClusterReader(admin),
                [
                    BoundaryRequest(PAYMENTS, DOWN, 0, 2, 6),
                    BoundaryRequest(PAYMENTS, "broker-a", 0, 2, 6),
                ],
            )

    down, up = asyncio.run(read())
    assert down.first is None
    assert down.first_note == down.last_note == f"{DOWN} did not answer: timed out"
    assert down.unread
    assert up.first is not None
    assert up.last_skipped is not None
    assert not up.unread

    target = ["--namesrv", sandbox.namesrv_addr, "--timeout", "1"]
    assert main(["message", "-t", PAYMENTS, "-b", DOWN, "-q", "0", "-o", "6", *target]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"rmq-console: no message at {PAYMENTS}/{DOWN}/0 offset 6: {DOWN} did not answer: "
        "timed out\n"
    )
    assert main(["message", "-t", PAYMENTS, "-b", "broker-a", "-q", "0", "-o", "6", *target]) == 0
    out = capsys.readouterr().out
    assert f"message        {PAYMENTS}/broker-a/0 offset 6" in out
    assert f"keys           {PAYMENTS}-broker-a-0-" in out
    assert "store time     20" in out
    assert out.rstrip().endswith(
        f"mqadmin equivalent: mqadmin queryMsgByOffset -t {PAYMENTS} -b broker-a -i 0 -o 6 "
        f"-n {sandbox.namesrv_addr}"
    )
    assert (
        main(["message", "-t", PAYMENTS, "-b", "broker-a", "-q", "0", "-o", "100000", *target]) == 2
    )
    assert "it is beyond the queue's end" in capsys.readouterr().err

"""The fleet benchmarks' groups, seeded fast: it is set-up, not a figure.

Every group of the fleet is on both brokers with its %RETRY% topic (how mqadmin finds a group),
committed at its own offset on all 16 queues of one topic (8 on each broker). What is there
already is kept: a run that finds the groups of a previous module (the 2,000 of `fleet` under
the 10,000) writes only what is missing.

- groups and retry topics: the list forms of the create requests, a few thousand per request
  (a broker persists its whole table after every create: one by one, 10,000 creates cost it
  10,000 rewrites of a growing file);
- offsets: UPDATE_CONSUMER_OFFSET frames pipelined over a few raw connections per broker, not
  one awaited request each. A broker loses concurrent *first* commits of a topic@group (fact
  sheet §9.1), so the first queue of each group goes first, answered; the other seven then go
  oneway (the Java client's own `updateConsumerOffsetOneway`), with no answer to wait for or
  decode;
- and nothing is believed before it is read back: each broker's whole offset table
  (GET_ALL_CONSUMER_OFFSET, one request) must hold every offset written; what it lacks is
  written again, answered, and read back again.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from console.rocketmq import frame
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import FLAG_ONEWAY, RequestCode, ResponseCode
from console.rocketmq.connection import split_addr
from tests.support.sends import indexed

PREFIX = "bench-fleet-"
TOPIC = "bench-fleet"
QUEUES_PER_BROKER = 8
MESSAGES_PER_QUEUE = 40
CREATE_TOPIC_LIST = 18  # UPDATE_AND_CREATE_TOPIC_LIST (5.x)
CREATE_GROUP_LIST = 225  # UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (5.x)
#: Groups (or retry topics) per list request: a body of a few hundred KB.
CREATE_CHUNK = 2500
#: Raw connections per broker the offsets are pipelined over.
CONNECTIONS = 4
_QUEUE_ID_KEY = re.compile(rb"([{,])(-?\d+):")
#: Seconds between read-backs while the brokers take the oneway writes.
SETTLE_S = 0.5
#: Rounds of writing again what a read-back did not find, before the seed gives up.
ROUNDS = 3


def fleet(size: int) -> list[str]:
    """The fleet's group names: the first 2,000 of 10,000 are the 2,000 of a smaller run."""
    return [f"{PREFIX}{i:04d}" for i in range(size)]


def committed_at(index: int) -> int:
    """Where group `index` is committed on each of its queues (1 .. MESSAGES_PER_QUEUE - 1)."""
    return 1 + index % (MESSAGES_PER_QUEUE - 1)


@dataclass(frozen=True)
class Seeded:
    #: Each group's total lag, from the queues' max offsets as they are.
    expected: dict[str, int]
    #: Seconds of each part: create, send, commit, verify.
    parts: dict[str, float]
    #: Offsets written (0 when a previous run left them all in place).
    written: int


async def seed(namesrv: str, groups: Sequence[str]) -> Seeded:
    parts: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        parts[name] = now - clock
        clock = now

    async with AdminClient(namesrv, timeout=60) as admin:
        brokers = sorted((await admin.master_addrs()).values())
        await _create(admin, brokers, groups)
        lap("create")
        await _send(admin, brokers)
        lap("send")
        target = {g: committed_at(i) for i, g in enumerate(groups)}
        written = 0
        for round_ in range(ROUNDS + 1):
            lacking = await _lacking(admin, brokers, target)
            if round_ == 1:
                # The oneway writes are queued in the brokers: wait while they are taken.
                lacking = await _settled(admin, brokers, target, lacking)
            lap("verify" if round_ else "read")
            if not lacking:
                break
            if round_ == ROUNDS:
                example = next(iter(lacking.values()))[:3]
                raise RuntimeError(
                    f"offsets not taken after {ROUNDS} rounds: "
                    f"{sum(map(len, lacking.values()))} lacking, e.g. {example}"
                )
            written += sum(map(len, lacking.values()))
            # First commits answered (one queue of each new topic@group), then the rest
            # oneway; a second round writes only what the first lost, answered.
            await asyncio.gather(
                *(_commit(addr, writes, oneway=round_ == 0) for addr, writes in lacking.items())
            )
            lap("commit")
        maxes = [
            s.max_offset for a in brokers for s in (await admin.topic_stats(a, TOPIC)).values()
        ]
    # From the queues' max offsets as they are, not as planned: a send retried by the client
    # may have stored a message twice.
    expected = {g: sum(m - c for m in maxes) for g, c in target.items()}
    return Seeded(expected, parts, written)


# ---- groups, topic, messages -------------------------------------------------------------------


async def _create(admin: AdminClient, brokers: Sequence[str], groups: Sequence[str]) -> None:
    for addr in brokers:
        known = await admin.subscription_groups(addr)
        new = [g for g in groups if g not in known]
        for start in range(0, len(new), CREATE_CHUNK):
            chunk = new[start : start + CREATE_CHUNK]
            await admin.call(addr, CREATE_GROUP_LIST, body=_group_list(chunk))
            await admin.call(addr, CREATE_TOPIC_LIST, body=_retry_topic_list(chunk))


async def _send(admin: AdminClient, brokers: Sequence[str]) -> None:
    """The topic, and its queues filled to MESSAGES_PER_QUEUE (a queue that has them is left)."""
    gate = asyncio.Semaphore(64)

    async def send(addr: str, queue_id: int) -> None:
        async with gate:
            await admin.send_message(addr, TOPIC, queue_id, b"fleet")

    sends = []
    for addr in brokers:
        await admin.create_topic(
            addr, TOPIC, read_queues=QUEUES_PER_BROKER, write_queues=QUEUES_PER_BROKER
        )
        stats = await admin.topic_stats(addr, TOPIC)
        for mq, s in stats.items():
            sends += [send(addr, mq.queue_id) for _ in range(MESSAGES_PER_QUEUE - s.max_offset)]
    await asyncio.gather(*sends)
    for addr in brokers:
        await indexed(
            admin, addr, TOPIC, dict.fromkeys(range(QUEUES_PER_BROKER), MESSAGES_PER_QUEUE)
        )


def _group_list(groups: Sequence[str]) -> bytes:
    """Body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (SubscriptionGroupList)."""
    configs = [
        {
            "groupName": g,
            "consumeEnable": True,
            "consumeFromMinEnable": True,
            "consumeBroadcastEnable": True,
            "retryQueueNums": 1,
            "retryMaxTimes": 16,
        }
        for g in groups
    ]
    return json.dumps({"groupConfigList": configs}).encode()


def _retry_topic_list(groups: Sequence[str]) -> bytes:
    """Body of UPDATE_AND_CREATE_TOPIC_LIST (CreateTopicListRequestBody): the %RETRY% topic
    mqadmin finds each group by."""
    topics = [
        {
            "topicName": f"%RETRY%{g}",
            "readQueueNums": 1,
            "writeQueueNums": 1,
            "perm": 6,
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0,
            "order": False,
            "attributes": {},
        }
        for g in groups
    ]
    return json.dumps({"topicConfigList": topics}).encode()


# ---- offsets -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Write:
    group: str
    queue_id: int
    offset: int
    #: The broker has no offset of this topic@group yet: this write must be answered before
    #: any other of the same table goes.
    first: bool


async def _lacking(
    admin: AdminClient, brokers: Sequence[str], target: dict[str, int]
) -> dict[str, list[_Write]]:
    """What each broker's offset table does not hold as `target` says."""
    out: dict[str, list[_Write]] = {}
    for addr in brokers:
        table = await _offset_table(admin, addr)
        writes = []
        for group, offset in target.items():
            held = table.get((TOPIC, group), {})
            wrong = [q for q in range(QUEUES_PER_BROKER) if held.get(q) != offset]
            writes += [_Write(group, q, offset, first=not held and q == 0) for q in wrong]
        if writes:
            out[addr] = writes
    return out


async def _offset_table(admin: AdminClient, addr: str) -> dict[tuple[str, str], dict[int, int]]:
    """GET_ALL_CONSUMER_OFFSET, read by the C parser: fastjson writes the queue ids unquoted
    (`{0:12}`), which the console's tolerant parser walks in Python (seconds for a table of
    10,000 groups). Here no name holds a brace, comma or colon, so quoting every `{N:` and `,N:`
    makes it standard JSON."""
    resp = await admin.call(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
    text = _QUEUE_ID_KEY.sub(rb'\1"\2":', resp.body).decode()
    table = json.loads(text)["offsetTable"]
    out = {}
    for key, queues in table.items():
        topic, _, group = key.rpartition("@")
        out[(topic, group)] = {int(q): int(o) for q, o in queues.items()}
    return out


async def _settled(
    admin: AdminClient,
    brokers: Sequence[str],
    target: dict[str, int],
    lacking: dict[str, list[_Write]],
) -> dict[str, list[_Write]]:
    """Read the tables again while the brokers are still taking what was sent (fewer lack
    each time); what still lacks when that stops is lost, to be written again."""
    before = sum(map(len, lacking.values()))
    while before:
        await asyncio.sleep(SETTLE_S)
        lacking = await _lacking(admin, brokers, target)
        now = sum(map(len, lacking.values()))
        if now >= before:
            break
        before = now
    return lacking


async def _commit(addr: str, writes: Sequence[_Write], *, oneway: bool) -> None:
    """Each table's first write answered, then the others (oneway when `oneway`)."""
    firsts = [w for w in writes if w.first]
    rest = [w for w in writes if not w.first]
    if firsts:
        await _pipeline(addr, firsts, oneway=False)
    if rest:
        await _pipeline(addr, rest, oneway=oneway)


async def _pipeline(addr: str, writes: Sequence[_Write], *, oneway: bool) -> None:
    """The writes over CONNECTIONS raw connections, written back to back; when answered, every
    answer must be SUCCESS (the read-back after is the proof all the same)."""
    host, port = split_addr(addr)
    share = [writes[i::CONNECTIONS] for i in range(CONNECTIONS)]

    async def one(part: Sequence[_Write]) -> None:
        if not part:
            return
        reader, writer = await asyncio.open_connection(host, port)
        try:
            flag = FLAG_ONEWAY if oneway else 0
            writer.write(b"".join(_frame(w, n, flag) for n, w in enumerate(part)))
            await writer.drain()
            if not oneway:
                await _answers(addr, reader, len(part))
        finally:
            writer.close()
            await writer.wait_closed()

    await asyncio.gather(*(one(part) for part in share))


def _frame(w: _Write, opaque: int, flag: int) -> bytes:
    fields = {
        "consumerGroup": w.group,
        "topic": TOPIC,
        "queueId": str(w.queue_id),
        "commitOffset": str(w.offset),
    }
    return frame.encode(
        frame.Command(RequestCode.UPDATE_CONSUMER_OFFSET, opaque, flag, ext_fields=fields)
    )


async def _answers(addr: str, reader: asyncio.StreamReader, count: int) -> None:
    for _ in range(count):
        length = frame.frame_length(await asyncio.wait_for(reader.readexactly(4), 60))
        answer = frame.decode(await reader.readexactly(length))
        if answer.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"{addr} refused an offset: {answer.code} {answer.remark}")

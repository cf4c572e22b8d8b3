"""A plan refuses a lite group (RocketMQ 5.5, console.domain.lite): why, and what to do instead.

A lite group's offsets are one per lite topic (`%LMQ%$<parent>$<lite topic>`, queue 0, on the
broker the name hashes to), and there can be as many lite topics as sessions or devices. Seen on
5.5.0 brokers (tests/integration/test_lite_groups.py):

- A broker keeping consumer offsets in RocksDB (`configManagerVersion=v2`) lists none of a
  group's lite topics (not in its consume stats, its offset table or its own lite count), so a
  plan cannot say what it would move there.
- There, the brokers' own reset (INVOKE_BROKER_TO_RESET_OFFSET on the LMQ name, queue 0, an
  offset) answers SUCCESS with the target in its body, yet QUERY_CONSUMER_OFFSET and
  GET_LITE_GROUP_INFO still read the old offset: it waits for the consumer's next pop, and a
  write that cannot be read back is not believed here. It also makes the broker ignore a direct
  commit of that lite topic until then ("Offset has been previously reset").
- What does move one lite topic and reads back at once on both stores is a direct commit
  (UPDATE_CONSUMER_OFFSET on the LMQ name, queue 0), which `mqadmin resetOffsetByTime -b ADDR
  -q 0 -o OFFSET` sends (followed by the brokers' reset to the same offset); a subscribed
  consumer pops from there at its next pop (a replay, as seen on a JSON store).

So the plan names the lite group and gives the per-lite-topic command instead.
"""

from __future__ import annotations

import shlex

from console.domain.lite import lite_queue
from console.domain.spec import ResetSpec, SpecError, ToGroup
from console.rocketmq.errors import RocketMQError
from console.services.read.reader import ClusterReader


async def refuse_lite(reader: ClusterReader, spec: ResetSpec) -> None:
    """SpecError naming the field of the first lite group the spec names (a group to reset, or
    the group a to-group plan copies from). Groups the brokers cannot be asked about are left
    to the snapshot, which says what it could not read."""
    named = [(f"scope.groups[{i}]", g) for i, g in enumerate(spec.scope.groups)]
    if isinstance(spec.strategy, ToGroup):
        named.append(("strategy.to-group", spec.strategy.group))
    try:
        groups = await reader.groups(include_system=True)
    except RocketMQError:
        return
    for where, group in named:
        config = groups.get(group)
        if config is not None and config.lite_bind_topic:
            raise SpecError(where, lite_refusal(group, config.lite_bind_topic))


def lite_refusal(group: str, parent_topic: str) -> str:
    """Why a lite group is not planned, and the command that moves one of its lite topics."""
    queue = lite_queue(parent_topic, "LITE_TOPIC")
    command = shlex.join(
        ["mqadmin", "resetOffsetByTime", "-g", group, "-t", queue, "-b", "BROKER_ADDR"]
        + ["-q", "0", "-o", "OFFSET", "-s", "now"]
    )
    check = shlex.join(
        ["mqadmin", "getLiteGroupInfo", "-p", parent_topic, "-g", group, "-l", "LITE_TOPIC"]
    )
    return (
        f"{group!r} is a lite group (RocketMQ 5.5) of parent topic {parent_topic!r}: its "
        f"offsets are one per lite topic ({queue}, queue 0), which a plan does not reset: a "
        "broker keeping offsets in RocksDB (configManagerVersion=v2) lists none of them, and "
        "the brokers' own reset of one is not read back before its consumer pops again. Move "
        f"one lite topic at a time instead: `{command}` (on the broker that holds it), then "
        f"read it back with `{check}`"
    )

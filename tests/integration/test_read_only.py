"""`read_only` enforced through the one factory, against the real sandbox: a writer is refused
before anything is opened, and a reader's writes never reach the broker."""

from __future__ import annotations

import pytest

from console.config import ClusterConfig, CredentialsRef
from console.rocketmq.errors import ReadOnlyError
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import GROUP_OFFLINE, TOPIC_ORDERS
from console.services.infra.access import open_admin

Queue = tuple[str, int]


async def committed(sandbox: Sandbox) -> dict[Queue, int | None]:
    async with sandbox.admin() as admin:
        return {
            (name, q): await admin.query_consumer_offset(addr, GROUP_OFFLINE, TOPIC_ORDERS, q)
            for name, addr in sorted(sandbox.broker_addrs.items())
            for q in range(4)
        }


def test_a_read_only_cluster_refuses_a_writer(sandbox: Sandbox) -> None:
    # Credentials that cannot resolve: had the factory gone further than the check, this
    # would be a ConfigError about the variable.
    refs = CredentialsRef("env:RMQ_TEST_UNSET_AK", "env:RMQ_TEST_UNSET_SK")
    cluster = ClusterConfig("prod", (sandbox.namesrv_addr,), read_only=True, credentials=refs)
    with pytest.raises(ReadOnlyError, match="'prod' is read-only"):
        open_admin(cluster, write=True)


@pytest.mark.parametrize("read_only", [True, False])
async def test_a_readers_writes_never_reach_the_broker(sandbox: Sandbox, read_only: bool) -> None:
    before = await committed(sandbox)
    assert all(v is not None and v > 0 for v in before.values())  # the seed committed them
    cluster = ClusterConfig("sandbox", (sandbox.namesrv_addr,), read_only=read_only)
    async with open_admin(cluster) as admin:
        for (name, q), offset in before.items():
            addr = sandbox.broker_addrs[name]
            assert offset is not None
            with pytest.raises(ReadOnlyError):
                await admin.update_consumer_offset(addr, GROUP_OFFLINE, TOPIC_ORDERS, q, 0)
            with pytest.raises(ReadOnlyError):
                await admin.reset_offset(addr, GROUP_OFFLINE, TOPIC_ORDERS, timestamp_ms=0)
            with pytest.raises(ReadOnlyError):
                await admin.reset_offset(addr, GROUP_OFFLINE, TOPIC_ORDERS, queue_id=q, offset=0)
        # The same client still reads.
        assert (
            await admin.query_consumer_offset(
                sandbox.broker_addrs["broker-a"], GROUP_OFFLINE, TOPIC_ORDERS, 0
            )
            == before[("broker-a", 0)]
        )
    assert await committed(sandbox) == before

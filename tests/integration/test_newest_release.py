"""The suite's read, plan, apply, undo, server-side reset, client push, boundary and walkthrough
tests once more, against the newest RocketMQ release whose jars can be fetched
(conftest.NEWEST_RELEASE), on a cluster whose servers also enforce mutual TLS, that runs its own
proxy and lite group, and whose broker-b keeps consumer offsets in RocksDB.

The tests are the main sandbox's own, imported here: pytest collects them in this module too,
where `sandbox` is this cluster (the fixture below overrides the session's for this module
only). They reach the cluster as an operator's config would: `sandbox.admin()` and
`sandbox.config_entry()` carry its `tls:`; mqadmin, the Java consumers and the offset oracle run
with the TLS system properties a `tls:` maps to. So every client route (the wire client, the
network process's source, Spark executors' timestamp lookups, the offset writer, the client
push, the boundary pulls, a walkthrough, mqadmin) speaks TLS to a 5.5 broker here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console.domain.journal import QueueState
from console.domain.reset_paths import ResetPathKind
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import TOPIC_ORDERS
from console.services.apply.intents import ApplyPlan
from console.services.apply.session import ApplySession
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from tests.integration.test_apply import (  # noqa: F401 (collected here, on this cluster)
    admin,
    runner,
    test_a_plan_is_applied_verified_journaled_and_audited,
    test_the_apply_command_confirms_writes_and_lists,
)
from tests.integration.test_apply_client_push import (  # noqa: F401
    legacy_reset,
    test_the_client_push_and_the_direct_write_on_brokers_without_server_side_reset,
)
from tests.integration.test_boundary_messages import (  # noqa: F401
    test_boundary_messages_are_what_mqadmin_prints,
    test_the_end_and_beyond_are_said_and_mqadmin_finds_nothing_there,
)
from tests.integration.test_lag_matches_mqadmin import (  # noqa: F401
    cli_config,
    test_lag_agrees_with_consumer_progress,
    test_unknown_is_not_zero_for_the_partly_committed_group,
)
from tests.integration.test_plan_timestamp import (  # noqa: F401
    test_to_timestamp_targets_match_the_tools,
)
from tests.integration.test_remote_source import (  # noqa: F401 (the network process)
    backend,
    cluster,
    source,
    test_every_operation_answers_as_the_backend_does,
)
from tests.integration.test_walkthrough_cli import (  # noqa: F401
    configured,
    test_a_walkthrough_from_the_command_line_applies_verifies_and_reports,
)
from tests.support.groups import committed, new_group, shift_plan
from tests.support.pop import reset_a_popping_group
from tests.support.releases import NEWEST_RELEASE
from tests.support.writes import confirm_every_name, write_access


@pytest.fixture(scope="module")
def sandbox(newest_cluster: Sandbox) -> Sandbox:
    """This module's cluster for every test collected in it."""
    assert newest_cluster.version == NEWEST_RELEASE
    assert newest_cluster.tls is not None
    assert newest_cluster.tls.cert is not None
    return newest_cluster


async def test_the_brokers_are_the_newest_release_with_rocksdb_offsets(
    newest_cluster: Sandbox,
) -> None:
    """What the tests above ran against, as the brokers themselves say it: broker-b keeps
    consumer offsets in RocksDB (v2), broker-a in its JSON file (v1)."""
    async with newest_cluster.admin() as client:
        stores = {}
        for name, addr in newest_cluster.broker_addrs.items():
            runtime = await client.broker_runtime(addr)
            assert runtime["brokerVersionDesc"] == "V" + NEWEST_RELEASE.replace(".", "_")
            config = await client.broker_config(addr)
            stores[name] = config["configManagerVersion"]
            assert config["useServerSideResetOffset"] == "true"
    assert stores == {"broker-a": "v1", "broker-b": "v2"}


async def test_an_offline_reset_on_the_v2_offset_store_outlives_a_broker_restart(
    newest_cluster: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    """5.5's RocksDB (v2) offset store saves a server-side reset under topic and group swapped
    (ConsumerOffsetManagerV2.assignResetOffset): read back at once it looks written, and a
    restart loses it. So a group nobody consumes is written directly there, which the store
    saves: the offsets the apply verified are still there after the broker restarts."""
    sandbox = newest_cluster
    ws = tmp_path / "ws"
    async with sandbox.admin(timeout=10) as client:
        group, before = await new_group(sandbox, client)
        plan = await shift_plan(sandbox, client, plan_runner, Workspace(ws), group)
        reader = sandbox.reader(client)
        session = ApplySession(write_access(reader, ws, "sandbox"), ApplyPlan(plan))
        result = await session.run(confirm_every_name)
    journal = result.journal
    assert journal is not None, result.refused
    assert journal.paths == {group: str(ResetPathKind.OFFLINE_UPDATE)}
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
    targets = {k: v - 3 for k, v in before.items()}
    for broker in sorted(sandbox.broker_addrs):
        await sandbox.stop_broker(broker)
        await sandbox.start_broker(broker)
    async with sandbox.admin(timeout=10) as client:
        assert await committed(sandbox, client, group) == targets


async def test_a_fifo_pop_group_is_reset_by_its_brokers_and_handed_the_target_again(
    newest_cluster: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    """An ordered (FIFO) POP consumer takes the brokers' own reset on the newest release too
    (apache/rocketmq 10229 reported one that did not)."""
    await reset_a_popping_group(
        newest_cluster, plan_runner, tmp_path / "ws", orderly=True, topic=TOPIC_ORDERS
    )

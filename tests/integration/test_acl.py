"""ACL signing against a real broker with ACL 2.0 authentication switched on.

The ACL cluster (fixture `acl_cluster`: a name server and one broker of its own, outside the
sandbox's cluster) starts with an initial user; the client must be let in with that user's
password and kept out with anything else.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from console.config import ClusterConfig, CredentialsRef
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import AccessDenied, BrokerError
from console.rocketmq.signing import Credentials
from console.sandbox.acl import ACL_GROUP, ACL_TOPIC, USERNAME, AclSandbox
from console.services.infra.access import open_admin

pytestmark = pytest.mark.integration


async def test_signed_requests_pass_with_the_right_password(acl_cluster: AclSandbox) -> None:
    addr = acl_cluster.broker_addr
    async with AdminClient(addr, credentials=acl_cluster.user.credentials) as client:
        runtime = await client.broker_runtime(addr)
        assert runtime["brokerVersionDesc"] == "V5_3_3"
        await client.create_topic(addr, "acl-topic", read_queues=2, write_queues=2)
        # A request with a body: the body is part of what is signed.
        sent = await client.send_message(addr, "acl-topic", 1, b"signed body")
        assert sent.queue_offset == 0
        # The broker indexes a stored message a moment after it answers the send.
        deadline = time.monotonic() + 10
        while await client.max_offset(addr, "acl-topic", 1) != 1:
            assert time.monotonic() < deadline, "the message sent was never indexed"
            await asyncio.sleep(0.05)


async def test_the_seed_went_in_signed(acl_cluster: AclSandbox) -> None:
    """The cluster is registered with its name server and holds what the seed reports."""
    seed = acl_cluster.seed
    assert seed is not None
    async with acl_cluster.admin() as client:
        assert await client.master_addrs() == acl_cluster.broker_addrs
        for mq, committed in seed.committed.items():
            addr = acl_cluster.broker_addrs[mq.broker_name]
            assert await client.max_offset(addr, mq.topic, mq.queue_id) == seed.max_offsets[mq]
            stored = await client.query_consumer_offset(addr, ACL_GROUP, ACL_TOPIC, mq.queue_id)
            assert stored == committed > 0


@pytest.mark.parametrize(
    ("credentials", "remark"),
    [
        (None, "username cannot be null"),
        (Credentials(USERNAME, "wrong-password"), "check signature failed"),
        (Credentials("nobody", "any-password"), "nobody is not found"),
    ],
)
async def test_unsigned_or_wrongly_signed_requests_are_refused(
    acl_cluster: AclSandbox, credentials: Credentials | None, remark: str
) -> None:
    addr = acl_cluster.broker_addr
    async with AdminClient(addr, credentials=credentials) as client:
        with pytest.raises(BrokerError) as info:
            await client.broker_runtime(addr)
    assert info.value.code == ResponseCode.NO_PERMISSION
    assert remark in (info.value.remark or "")
    assert acl_cluster.user.password not in str(info.value)


@pytest.mark.parametrize(
    ("secret", "named", "remark"),
    [
        (
            "wrong-password",
            f"refused the signature for access key {USERNAME}: check the secret",
            "check signature failed",
        ),
        (None, "accepts signed requests only: set credentials", "username cannot be null"),
    ],
)
async def test_the_factory_names_a_refused_identity(
    acl_cluster: AclSandbox,
    monkeypatch: pytest.MonkeyPatch,
    secret: str | None,
    named: str,
    remark: str,
) -> None:
    refs = None
    if secret is not None:
        monkeypatch.setenv("RMQ_TEST_ACL_AK", USERNAME)
        monkeypatch.setenv("RMQ_TEST_ACL_SK", secret)
        refs = CredentialsRef("env:RMQ_TEST_ACL_AK", "env:RMQ_TEST_ACL_SK")
    cluster = ClusterConfig("acl", (acl_cluster.namesrv_addr,), credentials=refs)
    async with open_admin(cluster) as admin:
        with pytest.raises(AccessDenied) as info:
            await admin.broker_runtime(acl_cluster.broker_addr)
    text = str(info.value)
    assert text.startswith(acl_cluster.broker_addr)
    assert named in text
    assert remark in text
    assert acl_cluster.user.password not in text


async def test_the_factory_signs_with_the_referenced_credentials(
    acl_cluster: AclSandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secret_file = tmp_path / "secret"
    secret_file.write_text(acl_cluster.user.password + "\n")
    monkeypatch.setenv("RMQ_TEST_ACL_AK", USERNAME)
    refs = CredentialsRef("env:RMQ_TEST_ACL_AK", f"file:{secret_file}")
    cluster = ClusterConfig("acl", (acl_cluster.namesrv_addr,), credentials=refs)
    async with open_admin(cluster) as admin:
        runtime = await admin.broker_runtime(acl_cluster.broker_addr)
    assert runtime["brokerVersionDesc"] == "V5_3_3"

"""ACL signing against a real broker with ACL 2.0 authentication switched on.

A broker of its own (outside the sandbox's cluster, so no other test sees it) starts with an
initial user; the client must be let in with that user's password and kept out with anything else.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, RocketMQError
from console.rocketmq.signing import Credentials
from console.sandbox.cache import Distribution, cache_root
from console.sandbox.cluster import ClusterConfig, broker_properties
from console.sandbox.jvm import BROKER_MAIN, JvmOptions, java_argv, jvm_env
from console.sandbox.ports import ClusterPorts, free_ports
from console.sandbox.proc import LaunchSpec, ManagedProcess, log_tail
from console.sandbox.toolchain import find_tools

pytestmark = pytest.mark.integration

USER, PASSWORD = "rmq-operator", "s3cret-Pa55"
AUTH = {
    "authenticationEnabled": "true",
    "authenticationProvider": "org.apache.rocketmq.auth.authentication.provider."
    "DefaultAuthenticationProvider",
    "authenticationMetadataProvider": "org.apache.rocketmq.auth.authentication.provider."
    "LocalAuthenticationMetadataProvider",
    "initAuthenticationUser": f'{{"username":"{USER}","password":"{PASSWORD}"}}',
    "innerClientAuthenticationCredentials": f'{{"accessKey":"{USER}","secretKey":"{PASSWORD}"}}',
}


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    run_dir = tmp_path_factory.mktemp("acl-broker")
    port = free_ports(["broker-acl"]).brokers["broker-acl"]
    # No name server: this broker only answers direct requests, and registers nowhere.
    config = ClusterConfig(run_dir=run_dir, ports=ClusterPorts(1, {"broker-acl": port}))
    props = {**broker_properties(config, "broker-acl"), **AUTH}
    conf = run_dir / "broker-acl.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    home = run_dir / "home"
    home.mkdir()
    argv = java_argv(
        find_tools().java,
        Distribution.in_cache(cache_root()).classpath,
        BROKER_MAIN,
        ["-c", str(conf)],
        options=JvmOptions(heap_mb=256, direct_mb=256),
        home=home,
    )
    proc = ManagedProcess(
        LaunchSpec("broker-acl", argv, run_dir / "broker.log", run_dir, jvm_env(home))
    )
    proc.start()
    addr = f"127.0.0.1:{port}"
    try:
        asyncio.run(_wait_answering(addr, proc, run_dir / "broker.log"))
        yield addr
    finally:
        proc.stop_now()


async def _wait_answering(addr: str, proc: ManagedProcess, log: Path) -> None:
    deadline = time.monotonic() + 90
    async with AdminClient(addr, timeout=2, credentials=Credentials(USER, PASSWORD)) as client:
        while True:
            try:
                await client.broker_runtime(addr)
                return
            except RocketMQError:
                if not proc.running or time.monotonic() > deadline:
                    pytest.fail(f"ACL broker did not come up at {addr}:\n{log_tail(log)}")
                await asyncio.sleep(0.25)


async def test_signed_requests_pass_with_the_right_password(acl_broker: str) -> None:
    async with AdminClient(acl_broker, credentials=Credentials(USER, PASSWORD)) as client:
        runtime = await client.broker_runtime(acl_broker)
        assert runtime["brokerVersionDesc"] == "V5_3_3"
        await client.create_topic(acl_broker, "acl-topic", read_queues=2, write_queues=2)
        # A request with a body: the body is part of what is signed.
        sent = await client.send_message(acl_broker, "acl-topic", 1, b"signed body")
        assert sent.queue_offset == 0
        assert await client.max_offset(acl_broker, "acl-topic", 1) == 1


@pytest.mark.parametrize(
    ("credentials", "remark"),
    [
        (None, "username cannot be null"),
        (Credentials(USER, "wrong-password"), "check signature failed"),
        (Credentials("nobody", PASSWORD), "nobody is not found"),
    ],
)
async def test_unsigned_or_wrongly_signed_requests_are_refused(
    acl_broker: str, credentials: Credentials | None, remark: str
) -> None:
    async with AdminClient(acl_broker, credentials=credentials) as client:
        with pytest.raises(BrokerError) as info:
            await client.broker_runtime(acl_broker)
    assert info.value.code == ResponseCode.NO_PERMISSION
    assert remark in (info.value.remark or "")
    assert PASSWORD not in str(info.value)

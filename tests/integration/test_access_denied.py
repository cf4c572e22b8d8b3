"""A refused signature, an unknown user and a denied permission, from a real ACL 2.0 broker to
the console: typed (AccessDenied, with the access key and whether the credentials or the
permission were refused), across the network process, worded so the operator knows what to fix.

A name server and a broker of their own (as in test_acl.py, outside the sandbox's cluster so no
other test sees them); the broker authenticates every request and authorizes by ACL, with a
super user that may do anything and a normal user that has no permission at all.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from console.config import ClusterConfig, Config, CredentialsRef
from console.remote.proxy import remote_source
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import RequestCode, ResponseCode
from console.rocketmq.errors import AccessDenied, RocketMQError
from console.rocketmq.signing import Credentials
from console.sandbox.cache import Distribution, cache_root
from console.sandbox.cluster import (
    ClusterSetup,
    broker_properties,
    namesrv_properties,
    render_properties,
)
from console.sandbox.jvm import BROKER_MAIN, NAMESRV_MAIN, JvmOptions, java_argv, jvm_env
from console.sandbox.ports import free_ports
from console.sandbox.proc import LaunchSpec, ManagedProcess, log_tail
from console.sandbox.toolchain import find_tools

pytestmark = pytest.mark.integration

BROKER = "broker-acl"
SUPER, SUPER_PASSWORD = "rmq-operator", "s3cret-Pa55"
NORMAL, NORMAL_PASSWORD = "rmq-viewer", "v1ewer-Pa55"
WRONG_PASSWORD = "not-the-Pa55word"
AUTH = {
    "authenticationEnabled": "true",
    "authenticationProvider": "org.apache.rocketmq.auth.authentication.provider."
    "DefaultAuthenticationProvider",
    "authenticationMetadataProvider": "org.apache.rocketmq.auth.authentication.provider."
    "LocalAuthenticationMetadataProvider",
    "initAuthenticationUser": f'{{"username":"{SUPER}","password":"{SUPER_PASSWORD}"}}',
    "innerClientAuthenticationCredentials": (
        f'{{"accessKey":"{SUPER}","secretKey":"{SUPER_PASSWORD}"}}'
    ),
    "authorizationEnabled": "true",
    "authorizationProvider": "org.apache.rocketmq.auth.authorization.provider."
    "DefaultAuthorizationProvider",
    "authorizationMetadataProvider": "org.apache.rocketmq.auth.authorization.provider."
    "LocalAuthorizationMetadataProvider",
}
AUTH_CREATE_USER = 3001


@dataclass(frozen=True)
class AclCluster:
    namesrv: str
    broker: str
    secrets: Path

    def console_cluster(self, access_key: str, secret: str) -> ClusterConfig:
        """The cluster as an operator configures it: credentials by reference to files."""
        ak, sk = self.secrets / f"{access_key}.ak", self.secrets / f"{access_key}-{secret}.sk"
        ak.write_text(access_key)
        sk.write_text(secret)
        return ClusterConfig(
            "acl", (self.namesrv,), credentials=CredentialsRef(f"file:{ak}", f"file:{sk}")
        )


def _launch(run_dir: Path, name: str, main: str, props: dict[str, str]) -> ManagedProcess:
    workdir = run_dir / name
    (workdir / "home").mkdir(parents=True)
    conf = workdir / f"{name}.conf"
    conf.write_text(render_properties(props))
    heap = JvmOptions(heap_mb=128) if main == NAMESRV_MAIN else JvmOptions(256, 256)
    argv = java_argv(
        find_tools().java,
        Distribution.in_cache(cache_root()).classpath,
        main,
        ["-c", str(conf)],
        options=heap,
        home=workdir / "home",
    )
    proc = ManagedProcess(
        LaunchSpec(name, argv, workdir / f"{name}.log", workdir, jvm_env(workdir / "home"))
    )
    proc.start()
    return proc


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    run_dir = tmp_path_factory.mktemp("acl-cluster")
    config = ClusterSetup(
        run_dir=run_dir, ports=free_ports([BROKER]), cluster_name="AclCluster", serves_pop=False
    )
    namesrv = _launch(run_dir, "namesrv", NAMESRV_MAIN, namesrv_properties(config))
    broker = _launch(run_dir, BROKER, BROKER_MAIN, {**broker_properties(config, BROKER), **AUTH})
    cluster = AclCluster(
        f"127.0.0.1:{config.ports.namesrv}",
        f"127.0.0.1:{config.ports.brokers[BROKER]}",
        run_dir / "secrets",
    )
    cluster.secrets.mkdir()
    try:
        asyncio.run(_wait_registered(cluster, [namesrv, broker]))
        yield cluster
    finally:
        broker.stop_now()
        namesrv.stop_now()


async def _wait_registered(cluster: AclCluster, procs: list[ManagedProcess]) -> None:
    """Until the broker answers its super user and the name server lists it; then the normal
    user is created (by the super user: creating users needs the cluster's UPDATE right)."""
    deadline = time.monotonic() + 120
    creds = Credentials(SUPER, SUPER_PASSWORD)
    async with AdminClient(cluster.namesrv, timeout=2, credentials=creds) as client:
        while True:
            try:
                await client.broker_runtime(cluster.broker)
                if BROKER in (await client.cluster_info()).brokers:
                    break
            except RocketMQError:
                pass
            if not all(p.running for p in procs) or time.monotonic() > deadline:
                logs = "\n".join(log_tail(p.spec.log) for p in procs)
                pytest.fail(f"the ACL cluster did not come up:\n{logs}")
            await asyncio.sleep(0.25)
        user = {"username": NORMAL, "password": NORMAL_PASSWORD, "userType": "Normal"}
        await client.call(
            cluster.broker,
            AUTH_CREATE_USER,
            {"username": NORMAL},
            body=json.dumps(user).encode(),
        )


async def test_a_wrong_secret_reaches_the_console_as_a_refused_signature(
    acl_cluster: AclCluster,
) -> None:
    cluster = acl_cluster.console_cluster(SUPER, WRONG_PASSWORD)
    source = remote_source(cluster, Config(clusters=(cluster,), timeout=5.0))
    try:
        with pytest.raises(AccessDenied) as raised:
            await source.groups()
        brokers = await source.brokers()
    finally:
        source.close()
    denied = raised.value
    assert denied.authentication is True
    assert denied.access_key == SUPER
    assert denied.addr == acl_cluster.broker
    assert (denied.code, denied.request_code) == (
        ResponseCode.NO_PERMISSION,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    )
    assert "check signature failed" in (denied.remark or "")
    assert str(denied).startswith(
        f"{acl_cluster.broker} refused the signature for access key {SUPER}: check the secret"
    )
    assert WRONG_PASSWORD not in str(denied)
    # The broker list shows the broker refusing, and why.
    (health,) = brokers
    assert not health.up
    assert f"refused the signature for access key {SUPER}" in (health.error or "")


async def test_an_unknown_user_is_named_as_such(acl_cluster: AclCluster) -> None:
    cluster = acl_cluster.console_cluster("nobody", SUPER_PASSWORD)
    source = remote_source(cluster, Config(clusters=(cluster,), timeout=5.0))
    try:
        with pytest.raises(AccessDenied) as raised:
            await source.groups()
    finally:
        source.close()
    assert raised.value.authentication is True
    assert raised.value.access_key == "nobody"
    assert f"{acl_cluster.broker} does not know access key nobody" in str(raised.value)
    assert SUPER_PASSWORD not in str(raised.value)


async def test_the_right_secret_reads_the_cluster_through_the_network_process(
    acl_cluster: AclCluster,
) -> None:
    cluster = acl_cluster.console_cluster(SUPER, SUPER_PASSWORD)
    source = remote_source(cluster, Config(clusters=(cluster,), timeout=5.0))
    try:
        (health,) = await source.brokers()
        groups = await source.groups()
    finally:
        source.close()
    assert (health.name, health.up, health.version) == (BROKER, True, "V5_3_3")
    assert isinstance(groups, list)


async def test_an_unsigned_request_is_told_to_set_credentials(acl_cluster: AclCluster) -> None:
    async with AdminClient(acl_cluster.namesrv) as client:
        with pytest.raises(AccessDenied) as raised:
            await client.broker_runtime(acl_cluster.broker)
    assert raised.value.authentication is True
    assert raised.value.access_key is None
    assert "set credentials (access key and secret) for this cluster" in str(raised.value)


async def test_a_denied_permission_is_told_from_refused_credentials(
    acl_cluster: AclCluster,
) -> None:
    creds = Credentials(NORMAL, NORMAL_PASSWORD)
    async with AdminClient(acl_cluster.namesrv, credentials=creds) as client:
        with pytest.raises(AccessDenied) as raised:
            await client.query_consumer_offset(acl_cluster.broker, "some-group", "some-topic", 0)
    denied = raised.value
    assert denied.authentication is False
    assert denied.access_key == NORMAL
    assert "has no permission" in (denied.remark or "")
    assert f"denied access key {NORMAL} request {RequestCode.QUERY_CONSUMER_OFFSET}" in str(denied)
    assert NORMAL_PASSWORD not in str(denied)

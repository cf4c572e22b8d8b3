"""A separate ACL cluster: one name server and one broker with ACL 2.0 authentication on, seeded
through the signed wire client.

For what only an authenticated cluster shows: signed reads, plans whose timestamp lookups run in
Spark executors, and what the console says with a wrong or missing secret. The main sandbox stays
unauthenticated, so nothing else has to sign.

Fact sheet §6.2: the broker checks every request's signature against its users (the initial user
is created, as a super user, at first start); the name server (5.3.3) checks nothing, so routes
are read unsigned. The broker's own inner client must sign too
(`innerClientAuthenticationCredentials`), or the broker cannot talk to itself.

Seeded scenario: topic `acl-orders` (4 queues) sent in timed batches, so a timestamp search lands
between batches; group `acl-billing` committed by hand at half of every queue; the group's
`%RETRY%` topic exists, so readers that find a group's brokers through it do.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from console.rocketmq.admin import AdminClient
from console.rocketmq.models import MessageQueue
from console.rocketmq.signing import Credentials
from console.rocketmq.topics import retry_topic
from console.sandbox import rundir
from console.sandbox.cache import cache_root
from console.sandbox.cluster import ClusterSetup, SandboxCluster
from console.sandbox.jars import fetch_jars
from console.sandbox.ports import ClusterPorts, free_ports
from console.sandbox.seed import SeedBatch, commit_offsets, send_patiently, wait_for_routes
from console.sandbox.toolchain import find_tools
from console.services.apply.offset_writer import OffsetWrite

ACL_CLUSTER = "AclCluster"
ACL_BROKER = "broker-acl"
ACL_TOPIC = "acl-orders"
ACL_GROUP = "acl-billing"
QUEUES = 4
BATCHES = 4
MESSAGES_PER_BATCH = 5  # per queue and batch
BATCH_PAUSE_S = 1.0
USERNAME = "rmq-operator"
# In the run directory, readable by its owner only: what a config's `file:` references name.
ACCESS_KEY_FILE = "user.access_key"
SECRET_KEY_FILE = "user.secret_key"

_AUTHENTICATION = {
    "authenticationEnabled": "true",
    "authenticationProvider": "org.apache.rocketmq.auth.authentication.provider."
    "DefaultAuthenticationProvider",
    "authenticationMetadataProvider": "org.apache.rocketmq.auth.authentication.provider."
    "LocalAuthenticationMetadataProvider",
}


@dataclass(frozen=True, slots=True)
class AclUser:
    """The broker's initial (super) user. ACL 2.0: the access key is the username and the
    secret key the password (fact sheet §6.2)."""

    username: str
    password: str

    def __repr__(self) -> str:  # a test failure's repr must not print the password
        return f"AclUser(username={self.username!r}, password='***')"

    @property
    def credentials(self) -> Credentials:
        return Credentials(self.username, self.password)


def new_user(username: str = USERNAME) -> AclUser:
    """A user with a fresh random password: a value no file or log can hold by chance, so a
    test can look for it."""
    return AclUser(username, secrets.token_urlsafe(18))


def auth_properties(user: AclUser) -> dict[str, str]:
    """broker.conf keys that switch ACL 2.0 authentication on with `user` as the first user."""
    return {
        **_AUTHENTICATION,
        "initAuthenticationUser": json.dumps(
            {"username": user.username, "password": user.password}
        ),
        "innerClientAuthenticationCredentials": json.dumps(
            {"accessKey": user.username, "secretKey": user.password}
        ),
    }


@dataclass(frozen=True, slots=True)
class AclOptions:
    run_dir: Path | None = None  # default <cache>/sandbox-acl; wiped at start
    ports: ClusterPorts | None = None  # default: free ports
    cache: Path | None = None
    user: AclUser | None = None  # default: new_user()
    seed: bool = True
    start_timeout: float = 120.0


@dataclass(frozen=True, slots=True)
class AclSeed:
    topic: str
    group: str
    batches: list[SeedBatch]  # in order; a time between two batches' times separates them
    committed: dict[MessageQueue, int]

    @property
    def max_offsets(self) -> dict[MessageQueue, int]:
        return self.batches[-1].max_offsets


class AclSandbox:
    """A running ACL cluster: addresses, the user, what was seeded."""

    def __init__(self, cluster: SandboxCluster, user: AclUser) -> None:
        self.cluster = cluster
        self.user = user
        self.seed: AclSeed | None = None

    @property
    def run_dir(self) -> Path:
        return self.cluster.config.run_dir

    @property
    def namesrv_addr(self) -> str:
        return self.cluster.namesrv_addr

    @property
    def cluster_name(self) -> str:
        return self.cluster.cluster_name

    @property
    def broker_addr(self) -> str:
        return self.cluster.broker_addrs[ACL_BROKER]

    @property
    def broker_addrs(self) -> dict[str, str]:
        return self.cluster.broker_addrs

    @property
    def access_key_file(self) -> Path:
        return self.run_dir / ACCESS_KEY_FILE

    @property
    def secret_key_file(self) -> Path:
        return self.run_dir / SECRET_KEY_FILE

    def admin(self, timeout: float = 3.0) -> AdminClient:
        """A new client signed as the cluster's user: `async with acl.admin() as c:`."""
        return self.cluster.admin(timeout)

    def write_key_files(self) -> None:
        """The user's keys as files (mode 0600), for a config's `file:` references."""
        for path, value in (
            (self.access_key_file, self.user.username),
            (self.secret_key_file, self.user.password),
        ):
            path.touch(mode=0o600)
            path.write_text(value + "\n")


@asynccontextmanager
async def acl_sandbox(options: AclOptions | None = None) -> AsyncIterator[AclSandbox]:
    """Start the ACL cluster (and seed it), yield it, and always stop it."""
    options = options or AclOptions()
    tools = find_tools()
    cache = options.cache or cache_root()
    dist = (await fetch_jars(cache)).distribution
    run_dir = (options.run_dir or cache / "sandbox-acl").resolve()
    pidfile = await asyncio.to_thread(rundir.prepare, run_dir)
    user = options.user or new_user()
    config = ClusterSetup(
        run_dir=run_dir,
        ports=options.ports or free_ports([ACL_BROKER]),
        cluster_name=ACL_CLUSTER,
        broker_extra=auth_properties(user),
        credentials=user.credentials,
        serves_pop=False,
    )
    acl = AclSandbox(SandboxCluster(dist, tools.java, config), user)
    try:
        await acl.cluster.start(options.start_timeout)
        info = rundir.SandboxInfo(acl.namesrv_addr, acl.cluster_name, acl.broker_addrs)
        rundir.write_info(run_dir, info)
        acl.write_key_files()
        if options.seed:
            async with acl.admin() as admin:
                acl.seed = await seed_acl(admin, acl.broker_addr)
        yield acl
    finally:
        try:
            await acl.cluster.stop()
        except BaseException:
            acl.cluster.stop_now()
            raise
        finally:
            pidfile.release()


async def seed_acl(admin: AdminClient, addr: str) -> AclSeed:
    """Topic, group and retry topic; messages in timed batches; offsets committed at half."""
    await admin.create_topic(addr, ACL_TOPIC, read_queues=QUEUES, write_queues=QUEUES)
    await admin.create_topic(addr, retry_topic(ACL_GROUP), read_queues=1, write_queues=1)
    await admin.create_group(addr, ACL_GROUP)
    await wait_for_routes(admin, [ACL_TOPIC, retry_topic(ACL_GROUP)], {ACL_BROKER})
    offsets = {MessageQueue(ACL_TOPIC, ACL_BROKER, q): 0 for q in range(QUEUES)}
    batches: list[SeedBatch] = []
    for batch in range(BATCHES):
        if batch:
            # Store times a clear second apart: a time between batches splits every queue.
            await asyncio.sleep(BATCH_PAUSE_S)
        started = _now_ms()
        for mq in offsets:
            for seq in range(MESSAGES_PER_BATCH):
                body = json.dumps({"queue": mq.queue_id, "batch": batch, "seq": seq}).encode()
                sent = await send_patiently(
                    admin, addr, ACL_TOPIC, mq.queue_id, body, tags="acl", keys=f"{batch}-{seq}"
                )
                offsets[mq] = max(offsets[mq], sent.queue_offset + 1)
        batches.append(SeedBatch(batch, started, _now_ms(), dict(offsets)))
    committed = {mq: n // 2 for mq, n in offsets.items()}
    await commit_offsets(
        admin,
        (OffsetWrite(addr, ACL_GROUP, mq.topic, mq.queue_id, o) for mq, o in committed.items()),
    )
    return AclSeed(ACL_TOPIC, ACL_GROUP, batches, committed)


def _now_ms() -> int:
    return int(time.time() * 1000)

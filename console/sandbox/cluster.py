"""A real RocketMQ cluster on loopback: one name server and two brokers in one run directory,
optionally a slave (broker id 1, its own process, store and ports) of a broker, and optionally
a proxy (cluster mode, a process of its own) in front of them for gRPC clients.

With `tls`, every server enforces TLS with certificates of the sandbox's own CA (console.sandbox
.certs), mutual TLS when `tls.mutual`: the JVM system properties are TlsSystemConfig's, as
NettyRemotingServer and TlsHelper read them (checked against 5.3.3 and 5.5.0).

One piece (over 400 lines): one cluster's processes, ports and files, started in one order and
stopped in its reverse.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from console import config as console_config
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.rocketmq.reach import DIRECT, Reach
from console.rocketmq.signing import Credentials
from console.sandbox.cache import Distribution
from console.sandbox.errors import StartupError
from console.sandbox.jvm import (
    BROKER_MAIN,
    NAMESRV_MAIN,
    PROXY_MAIN,
    JvmOptions,
    java_argv,
    jvm_env,
)
from console.sandbox.pidfile import PidFile
from console.sandbox.ports import LOOPBACK, ClusterPorts, port_free
from console.sandbox.proc import LaunchSpec, ManagedProcess, log_tail

if TYPE_CHECKING:  # the certificates' module (and cryptography) loads only for a TLS sandbox
    from console.sandbox.certs import SandboxCerts

CLUSTER_NAME = "SandboxCluster"
BROKER_NAMES: tuple[str, ...] = ("broker-a", "broker-b")
NAMESRV = "namesrv"
PROXY = "proxy"
SLAVE_ID = 1
UPDATE_BROKER_CONFIG = 25  # RequestCode.UPDATE_BROKER_CONFIG; only the sandbox needs it
GET_ROUTEINFO_BY_TOPIC = 105
_NUDGE_EVERY = 2.0
#: broker.conf keys of each consumer-offset store. `v2` keeps topics, groups and consumer
#: offsets in RocksDB (BrokerConfig.configManagerVersion, ConsumerOffsetManagerV2; 5.3.2+) and
#: leaves the message store as it is.
OFFSET_STORES: dict[str, dict[str, str]] = {
    "json": {},
    "rocksdb": {"configManagerVersion": "v2"},
}


@dataclass(frozen=True, slots=True)
class SandboxTls:
    """TLS on every server of a sandbox: `enforcing` (plaintext connections are closed; else
    permissive: TLS and plaintext both taken on the same port), the servers' certificate signed
    by the sandbox CA, and with `mutual` a client certificate of that CA required of every TLS
    client (the brokers towards the name server included)."""

    files: SandboxCerts
    mutual: bool = False
    enforcing: bool = True

    def client(self) -> console_config.TlsRef:
        """The `tls:` of a cluster config that reaches this sandbox."""
        pair = self.files.client if self.mutual else None
        return console_config.TlsRef(
            ca=str(self.files.ca),
            cert=str(pair.cert) if pair else None,
            key=str(pair.key) if pair else None,
        )

    def server_properties(self) -> dict[str, str]:
        """System properties of the name server's and the brokers' JVMs (TlsSystemConfig). A
        broker is also the name server's client: `tls.enable` and the client pair make it speak
        (mutual) TLS there."""
        ca, server = str(self.files.ca), self.files.server
        return {
            "tls.server.mode": "enforcing" if self.enforcing else "permissive",
            # Test mode (the default) makes a self-signed certificate and trusts everyone.
            "tls.test.mode.enable": "false",
            "tls.server.certPath": str(server.cert),
            "tls.server.keyPath": str(server.key),
            "tls.server.need.client.auth": "require" if self.mutual else "none",
            # Without authClient the server takes any client certificate (an insecure trust
            # manager); with it, only those the trusted CA signed.
            "tls.server.authClient": "true",
            "tls.server.trustCertPath": ca,
            "tls.enable": "true" if self.enforcing else "false",
            "tls.client.authServer": "true",
            "tls.client.trustCertPath": ca,
            "tls.client.certPath": str(server.cert),
            "tls.client.keyPath": str(server.key),
        }


@dataclass(frozen=True, slots=True)
class ClusterSetup:
    """How a sandbox cluster is laid out and started: its run directory, ports and JVMs (a
    cluster the console reads is console.config.ClusterConfig)."""

    run_dir: Path
    ports: ClusterPorts
    cluster_name: str = CLUSTER_NAME
    namesrv_jvm: JvmOptions = field(default_factory=lambda: JvmOptions(heap_mb=128))
    broker_jvm: JvmOptions = field(default_factory=lambda: JvmOptions(heap_mb=256, direct_mb=256))
    proxy_jvm: JvmOptions = field(default_factory=lambda: JvmOptions(heap_mb=192, direct_mb=128))
    #: Extra broker.conf keys for every broker (e.g. ACL 2.0 authentication, see sandbox.acl).
    broker_extra: Mapping[str, str] = field(default_factory=dict)
    #: Extra broker.conf keys of one broker (by name), over `broker_extra`: a cluster half
    #: moved to another offset store, as a rolling migration leaves it.
    broker_extra_of: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: What the sandbox's own client signs with, when the brokers require it.
    credentials: Credentials | None = None
    #: TLS on every server (None: plaintext).
    tls: SandboxTls | None = None
    #: The host the brokers register with the name server (`brokerIP1`). They bind loopback
    #: whatever it is: another 127.0.0.x is an address where nothing listens, as a pod IP is
    #: to a machine outside the pod network (console.sandbox.far).
    registered_host: str = LOOPBACK
    #: The brokers serve POP consumers (RocketMQ 5's gRPC clients through a proxy, remoting
    #: consumers in POP mode): the timer wheel and the POP services run, as on a production
    #: 5.x broker. Off, for a cluster no POP consumer reaches: neither runs. Idle, they are
    #: the most of a broker's CPU (a 5-ms scan loop, the timer's queues polled every 100 ms);
    #: a test run starts some thirty brokers on two cores.
    serves_pop: bool = True

    def with_peak_jit(self) -> ClusterSetup:
        """The same cluster, its name server, brokers and proxy on both JIT compilers."""
        return replace(
            self,
            namesrv_jvm=replace(self.namesrv_jvm, peak_jit=True),
            broker_jvm=replace(self.broker_jvm, peak_jit=True),
            proxy_jvm=replace(self.proxy_jvm, peak_jit=True),
        )

    def reach(self) -> Reach:
        """How this sandbox's own clients reach its brokers: a registered host of "another
        network" is mapped to loopback, where they listen."""
        if self.registered_host == LOOPBACK:
            return DIRECT
        return Reach.of([(self.registered_host, LOOPBACK)])

    @property
    def broker_names(self) -> list[str]:
        return list(self.ports.brokers)

    @property
    def slave_of(self) -> dict[str, str]:
        """The slaves' process names, each with its master's broker name."""
        return {slave_name(name): name for name in self.ports.slaves}

    @property
    def rocketmq_home(self) -> Path:
        return self.run_dir / "rocketmq-home"

    @property
    def pidfile(self) -> Path:
        return self.run_dir / "sandbox.pids"


def slave_name(broker: str) -> str:
    """The process (and run directory) name of `broker`'s slave."""
    return f"{broker}-slave"


def namesrv_properties(config: ClusterSetup) -> dict[str, str]:
    return {"listenPort": str(config.ports.namesrv), "bindAddress": LOOPBACK}


def proxy_config(config: ClusterSetup) -> dict[str, object]:
    """rmq-proxy.json of a proxy in cluster mode for the sandbox's cluster, on its ports.

    With TLS, the proxy's own certificate pair is named here (ProxyConfig's `tlsCertPath`,
    `tlsKeyPath`: its remoting and gRPC servers read them, not `tls.server.*`); the rest comes
    from the JVM's TlsSystemConfig properties, as for the brokers. Its remoting port then
    enforces what the brokers' do (mutual TLS included); its gRPC port takes TLS without a
    client certificate whatever is asked (5.5.0's ProxyAndTlsProtocolNegotiator builds its
    server context with ClientAuth.NONE)."""
    assert config.ports.proxy is not None
    assert config.ports.proxy_grpc is not None
    proxy: dict[str, object] = {
        "rocketMQClusterName": config.cluster_name,
        "proxyMode": "cluster",
        "namesrvAddr": f"{LOOPBACK}:{config.ports.namesrv}",
        "remotingListenPort": config.ports.proxy,
        "grpcServerPort": config.ports.proxy_grpc,
        "localServeAddr": LOOPBACK,
        # Every minute the proxy writes a jstack of itself to its log by default.
        "enablePrintJstack": False,
    }
    if config.tls is not None:
        server = config.tls.files.server
        proxy |= {
            # Test mode (the default) makes a self-signed certificate and trusts everyone.
            "tlsTestModeEnable": False,
            "tlsCertPath": str(server.cert),
            "tlsKeyPath": str(server.key),
        }
    return proxy


def broker_properties(config: ClusterSetup, name: str, *, slave: bool = False) -> dict[str, str]:
    """A broker small enough for a laptop: 16 MiB commit-log and timer-log files, no index.

    The timer wheel is on, as on every real 5.x broker: POP consumption (RocketMQ 5's gRPC
    clients, and remoting clients in POP mode) is refused without it ("pop message is forbidden
    because timerWheelEnable is false"). A cluster set not to serve POP (`serves_pop`) runs
    neither the wheel nor the POP services (the buffer merge and the revive service).

    `slave`: the slave of broker `name` instead, in a process, store and ports of its own. It
    learns its master's HA address from the name server and copies the master's commit log (HA)
    and, every 60 s, its topics, groups and consumer offsets (5.3.3 SlaveSynchronize)."""
    process = slave_name(name) if slave else name
    store = config.run_dir / process / "store"
    listen = config.ports.slaves[name] if slave else config.ports.brokers[name]
    return {
        "brokerClusterName": config.cluster_name,
        "brokerName": name,
        "brokerId": str(SLAVE_ID) if slave else "0",
        **({"brokerRole": "SLAVE"} if slave else {}),
        "namesrvAddr": f"{LOOPBACK}:{config.ports.namesrv}",
        # brokerIP1 is the address registered with the name server, brokerIP2 the HA address;
        # both default to the first non-loopback interface. The broker binds bindAddress
        # (NettyServerConfig), whatever it registers.
        "brokerIP1": config.registered_host,
        "brokerIP2": LOOPBACK,
        "bindAddress": LOOPBACK,
        "listenPort": str(listen),
        "storePathRootDir": str(store),
        "storePathCommitLog": str(store / "commitlog"),
        "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": str(3000 * 20),  # a multiple of the 20-byte entry
        **_pop_services(config.serves_pop),
        "messageIndexEnable": "false",
        # A developer's disk is often fuller than the defaults (75 %/90 %) allow: the broker would
        # delete the store or reject sends.
        "diskMaxUsedSpaceRatio": "95",
        "diskSpaceWarningLevelRatio": "98",
        # On a busy laptop or CI runner a send can wait in the broker's queue longer than the
        # 200 ms default, and the broker then rejects it ("[TIMEOUT_CLEAN_QUEUE]broker busy").
        "waitTimeMillsInSendQueue": "3000",
        "osPageCacheBusyTimeOutMills": "5000",
        **_metrics(config, name, slave),
        **config.broker_extra,
        **config.broker_extra_of.get(name, {}),
    }


def _pop_services(serves_pop: bool) -> dict[str, str]:
    if not serves_pop:
        return {"timerWheelEnable": "false", "popConsumerFSServiceInit": "false"}
    return {
        "timerWheelEnable": "true",
        "mappedFileSizeTimerLog": str(16 * 1024 * 1024),
        # Each flush compares the whole 7-day wheel (39 MB) byte by byte: every second (the
        # default) that is a tenth of a core per idle broker on both JIT compilers, a quarter on
        # the client compiler the sandbox runs, and half a second of CPU a flush still. Nothing
        # is lost between flushes: a restart re-walks the timer log from a file before the last
        # flushed position and revises the wheel (TimerMessageStore.recover).
        "timerFlushIntervalMs": "300000",
    }


def _metrics(config: ClusterSetup, name: str, slave: bool) -> dict[str, str]:
    """Metrics for Prometheus on the broker's own port, as production brokers export them:
    among them what POP groups popped and did not ack (rocketmq_consumer_inflight_messages)."""
    port = None if slave else config.ports.metrics.get(name)
    if port is None:
        return {}
    return {
        "metricsExporterType": "PROM",
        "metricsPromExporterHost": LOOPBACK,
        "metricsPromExporterPort": str(port),
    }


def render_properties(props: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


class SandboxCluster:
    """Starts, watches and stops the name server and brokers; knows their addresses and logs."""

    def __init__(
        self,
        dist: Distribution,
        java: Path,
        config: ClusterSetup,
        proxy_dist: Distribution | None = None,
    ) -> None:
        self.dist = dist
        #: The proxy's jars (sandbox.jars.fetch_proxy); needed when the ports plan a proxy.
        self.proxy_dist = proxy_dist
        self.java = java
        self.config = config
        self.pidfile = PidFile(config.pidfile)
        self._procs: dict[str, ManagedProcess] = {}
        # Spawning counts as a nudge: the broker gets its own chance to register first.
        self._last_nudge: dict[str, float] = {}

    # ---- addresses -------------------------------------------------------------------------

    @property
    def cluster_name(self) -> str:
        return self.config.cluster_name

    @property
    def namesrv_addr(self) -> str:
        return f"{LOOPBACK}:{self.config.ports.namesrv}"

    @property
    def broker_names(self) -> list[str]:
        return self.config.broker_names

    @property
    def broker_addrs(self) -> dict[str, str]:
        """Each broker's registered address (what the name server lists), by name."""
        host = self.config.registered_host
        return {n: f"{host}:{p}" for n, p in self.config.ports.brokers.items()}

    @property
    def slave_addrs(self) -> dict[str, str]:
        """The slave's address by its master's broker name."""
        host = self.config.registered_host
        return {n: f"{host}:{p}" for n, p in self.config.ports.slaves.items()}

    @property
    def proxy_addr(self) -> str | None:
        """The proxy's remoting address (admin requests it serves, e.g. who is connected)."""
        port = self.config.ports.proxy
        return None if port is None else f"{LOOPBACK}:{port}"

    @property
    def metrics_urls(self) -> dict[str, str]:
        """Where each broker exports its metrics for Prometheus, by broker name."""
        return {n: f"http://{LOOPBACK}:{p}/metrics" for n, p in self.config.ports.metrics.items()}

    @property
    def proxy_grpc_addr(self) -> str | None:
        """Where gRPC clients connect."""
        port = self.config.ports.proxy_grpc
        return None if port is None else f"{LOOPBACK}:{port}"

    def admin(self, timeout: float = 3.0) -> AdminClient:
        """A new client for this cluster, signed when its brokers require it, speaking TLS
        when they do."""
        tls = self.config.tls
        tls_client = tls.client().resolve() if tls is not None and tls.enforcing else None
        return AdminClient(
            [self.namesrv_addr],
            timeout=timeout,
            credentials=self.config.credentials,
            tls=tls_client,
            reach=self.config.reach(),
        )

    def log_path(self, name: str) -> Path:
        return self.config.run_dir / name / f"{name}.out"

    def pids(self) -> dict[str, int]:
        """PIDs of the cluster's processes that are running now."""
        return {n: p.pid for n, p in self._procs.items() if p.running and p.pid is not None}

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self, timeout: float = 90.0, *, slaves: bool = True) -> float:
        """Start the name server and every broker (and the slaves, unless `slaves=False`: see
        start_slave); return seconds until all were registered."""
        started = time.monotonic()
        self._check_ports(self.config.ports.all_ports())
        self.config.rocketmq_home.mkdir(parents=True, exist_ok=True)
        # All at once: the name server boots faster than a broker, and a broker that finds it
        # not yet listening is nudged into registering (see _nudge) instead of waiting 10 s.
        with_slaves = list(self.config.slave_of) if slaves else []
        for name in [NAMESRV, *self.broker_names, *with_slaves]:
            self._spawn(name)
        await self.wait_registered(
            [*self.broker_names, *with_slaves], timeout - (time.monotonic() - started)
        )
        if self.proxy_addr is not None:
            # Its own minute at least: on a loaded machine the brokers may take most of the
            # budget, and a proxy's JVM boots no faster than a broker's.
            await self.start_proxy(max(timeout - (time.monotonic() - started), 60.0))
        return time.monotonic() - started

    async def start_proxy(self, timeout: float, attempts: int = 3) -> None:
        """Start the proxy once the brokers are registered: at start it creates its system
        topic on the cluster's brokers and exits when there are none yet ("create system
        broadcast topic DefaultHeartBeatSyncerTopic failed"). One that exits during start-up
        anyway (a broker slow to serve on a loaded machine) is started again."""
        deadline = time.monotonic() + timeout
        for attempt in range(1, attempts + 1):
            self._spawn(PROXY)
            try:
                await self.wait_proxy(deadline - time.monotonic())
                return
            except StartupError:
                proc = self._procs[PROXY]
                if proc.running or attempt == attempts or time.monotonic() >= deadline:
                    raise
                proc.stop_now(0.0)  # reap it and take it off the pidfile

    async def wait_proxy(self, timeout: float) -> None:
        """Poll the proxy's remoting port until it serves a route of the cluster's (it asks the
        name server for them itself)."""
        assert self.proxy_addr is not None
        deadline = time.monotonic() + timeout
        last_error = "no answer yet"
        async with self.admin(timeout=2.0) as admin:
            while True:
                self._check_alive([PROXY])
                try:
                    await admin.call(self.proxy_addr, GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
                    return
                except RocketMQError as exc:
                    last_error = str(exc)
                if time.monotonic() >= deadline:
                    raise StartupError(
                        f"the proxy at {self.proxy_addr} did not serve after {timeout:.0f}s "
                        f"({last_error})\n" + log_tail(self.log_path(PROXY), 25)
                    )
                await asyncio.sleep(0.5)

    async def start_slave(self, broker: str, timeout: float = 60.0) -> None:
        """Start `broker`'s slave (configured in the ports) and wait until it is registered."""
        if broker not in self.config.ports.slaves:
            raise KeyError(f"no slave of {broker!r} configured in this sandbox")
        name = slave_name(broker)
        proc = self._procs.get(name)
        if proc is None or not proc.running:
            self._spawn(name)
        await self.wait_registered([name], timeout)

    def pause(self, name: str) -> None:
        """SIGSTOP one process (a broker, a slave, the name server): it keeps its sockets and
        answers nothing, as a hung JVM does."""
        os.kill(self._running(name), signal.SIGSTOP)

    def resume(self, name: str) -> None:
        os.kill(self._running(name), signal.SIGCONT)

    def _running(self, name: str) -> int:
        proc = self._procs.get(name)
        if proc is None or not proc.running or proc.pid is None:
            raise KeyError(f"{name!r} is not running in this sandbox")
        return proc.pid

    async def stop(self, grace: float = 30.0) -> None:
        """Stop every process at once.

        A broker takes ~10 s to shut down (fixed waits in its services) and the name server
        ~2.5 s; a broker that finds the name server gone only fails to unregister, which no
        one needs from a sandbox being torn down.
        """
        await asyncio.gather(*(p.stop(grace) for p in self._procs.values()))

    async def stop_broker(self, name: str, grace: float = 30.0) -> None:
        """Stop one broker (or slave) cleanly; its store and ports stay reserved for
        start_broker()."""
        proc = self._procs.get(self._known_broker(name))
        if proc is not None:
            if proc.running and proc.pid is not None:
                os.kill(proc.pid, signal.SIGCONT)  # a paused JVM cannot act on SIGTERM
            await proc.stop(grace)

    async def start_broker(self, name: str, timeout: float = 60.0) -> None:
        """Start one broker again on the same ports and store, and wait until it is registered."""
        self._known_broker(name)
        proc = self._procs.get(name)
        if proc is not None and proc.running:
            return
        self._spawn(name)
        await self.wait_registered([name], timeout)

    def stop_now(self, grace: float = 10.0) -> None:
        """Blocking stop for signal handlers and atexit: SIGTERM everything, then wait."""
        for proc in self._procs.values():
            if proc.running:
                proc.request_stop()
        deadline = time.monotonic() + grace
        for proc in self._procs.values():
            proc.stop_now(max(0.0, deadline - time.monotonic()))

    # ---- readiness -------------------------------------------------------------------------

    async def wait_registered(self, names: Iterable[str], timeout: float) -> None:
        """Poll GET_BROKER_CLUSTER_INFO until every named broker (or slave) is listed with its
        address, then until each answers GET_BROKER_RUNTIME_INFO."""
        wanted = {n: self._addr_of(n) for n in names}
        deadline = time.monotonic() + timeout
        last_error = "no answer yet"
        async with self.admin(timeout=2.0) as admin:
            while True:
                self._check_alive([NAMESRV, *wanted])
                try:
                    info = await admin.cluster_info()
                except RocketMQError as exc:
                    last_error = str(exc)
                else:
                    listed = {
                        n: a
                        for b in info.brokers.values()
                        for n, a in self._listed_names(b.name, b.addrs).items()
                    }
                    members = set(info.clusters.get(self.cluster_name, []))
                    missing = [
                        n
                        for n, a in wanted.items()
                        if listed.get(n) != a or self.config.slave_of.get(n, n) not in members
                    ]
                    if missing:
                        last_error = f"not yet registered: {', '.join(missing)}"
                        await self._nudge(admin, missing)
                    elif await self._all_answer(admin, wanted.values()):
                        return
                    else:
                        last_error = "registered, but not answering admin requests yet"
                if time.monotonic() >= deadline:
                    raise StartupError(
                        f"brokers not registered with {self.namesrv_addr} after {timeout:.0f}s "
                        f"({last_error})\n" + self._logs_of(wanted)
                    )
                await asyncio.sleep(0.25)

    async def _all_answer(self, admin: AdminClient, addrs: Iterable[str]) -> bool:
        """Registered is not serving: a broker just restarted on a busy machine can take longer
        than a client's timeout to answer its first requests, and would be reported down."""
        for addr in addrs:
            try:
                await admin.broker_runtime(addr)
            except RocketMQError:
                return False
        return True

    async def _nudge(self, admin: AdminClient, names: Iterable[str]) -> None:
        """Make a booted but unregistered broker register now instead of 10 s later.

        A 5.3.3 broker registers once at boot, but only with name servers its background scan
        has already connected to; when the scan loses that race the next attempt is a fixed
        10 s later. Re-setting brokerPermission to its current value (6, read-write) makes the
        broker call registerBrokerAll at once, with no other effect.
        """
        now = time.monotonic()
        for name in names:
            if now - self._last_nudge.get(name, 0.0) < _NUDGE_EVERY:
                continue
            self._last_nudge[name] = now
            try:
                await admin.call(
                    self._addr_of(name), UPDATE_BROKER_CONFIG, body=b"brokerPermission=6\n"
                )
            except RocketMQError:
                pass  # not listening yet: the next round tries again

    def _addr_of(self, name: str) -> str:
        master = self.config.slave_of.get(name)
        return self.slave_addrs[master] if master else self.broker_addrs[name]

    @staticmethod
    def _listed_names(broker: str, addrs: Mapping[int, str]) -> dict[str, str]:
        """A broker set as the name server lists it, by our process names."""
        out = {}
        if 0 in addrs:
            out[broker] = addrs[0]
        if SLAVE_ID in addrs:
            out[slave_name(broker)] = addrs[SLAVE_ID]
        return out

    def _check_alive(self, names: Iterable[str]) -> None:
        for name in names:
            proc = self._procs.get(name)
            if proc is not None and not proc.running:
                raise StartupError(
                    f"{name} exited with code {proc.returncode} during start-up\n"
                    + log_tail(self.log_path(name))
                )

    def _logs_of(self, names: Iterable[str]) -> str:
        return "\n".join(log_tail(self.log_path(n), 25) for n in [NAMESRV, *names])

    def _check_ports(self, ports: Sequence[int]) -> None:
        busy = [p for p in ports if not port_free(p)]
        if busy:
            raise StartupError(
                f"port(s) {', '.join(map(str, busy))} already in use; stop whatever listens there "
                "(`rmq-console sandbox down` for an earlier sandbox) or choose other ports"
            )

    def _known_broker(self, name: str) -> str:
        if name not in self.config.ports.brokers and name not in self.config.slave_of:
            known = ", ".join([*self.broker_names, *self.config.slave_of])
            raise KeyError(f"no broker {name!r} in this sandbox ({known})")
        return name

    # ---- processes -------------------------------------------------------------------------

    def _spawn(self, name: str) -> None:
        proc = ManagedProcess(self._launch_spec(name), self.pidfile)
        proc.start()
        self._procs[name] = proc
        self._last_nudge[name] = time.monotonic()

    def _launch_spec(self, name: str) -> LaunchSpec:
        workdir = self.config.run_dir / name
        workdir.mkdir(parents=True, exist_ok=True)
        conf = workdir / f"{name}.conf"
        if name == PROXY:
            return self._proxy_launch_spec(workdir)
        if name == NAMESRV:
            props, main = namesrv_properties(self.config), NAMESRV_MAIN
            jvm = self.config.namesrv_jvm
        elif name in self.config.slave_of:
            props = broker_properties(self.config, self.config.slave_of[name], slave=True)
            main, jvm = BROKER_MAIN, self.config.broker_jvm
        else:
            props, main = broker_properties(self.config, name), BROKER_MAIN
            jvm = self.config.broker_jvm
        conf.write_text(render_properties(props))
        if self.config.tls is not None:
            tls = self.config.tls.server_properties()
            jvm = replace(jvm, system_props={**jvm.system_props, **tls})
        argv = java_argv(
            self.java,
            self.dist.classpath,
            main,
            ["-c", str(conf)],
            options=jvm,
            home=workdir / "home",
        )
        return LaunchSpec(
            name=name,
            argv=argv,
            log=self.log_path(name),
            cwd=workdir,
            env=jvm_env(self.config.rocketmq_home),
        )

    def _proxy_launch_spec(self, workdir: Path) -> LaunchSpec:
        if self.proxy_dist is None:
            raise StartupError("the sandbox plans a proxy but has no proxy jars (fetch_proxy)")
        conf = workdir / "rmq-proxy.json"
        conf.write_text(json.dumps(proxy_config(self.config), indent=2) + "\n")
        jvm = self.config.proxy_jvm
        if self.config.tls is not None:
            tls = self.config.tls.server_properties()
            jvm = replace(jvm, system_props={**jvm.system_props, **tls})
        argv = java_argv(
            self.java,
            self.proxy_dist.classpath,
            PROXY_MAIN,
            ["-pc", str(conf), "-pm", "cluster"],
            options=jvm,
            home=workdir / "home",
        )
        return LaunchSpec(
            name=PROXY,
            argv=argv,
            log=self.log_path(PROXY),
            cwd=workdir,
            env=jvm_env(self.config.rocketmq_home),
        )

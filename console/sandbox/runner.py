"""The whole sandbox as one async context: fetch, build, start, seed, live traffic, teardown.

`SandboxOptions` chooses the RocketMQ release (its jars fetched into the cache), TLS on every
server (the sandbox's own CA, optionally mutual), and the brokers' consumer-offset store (the
default JSON file, or RocksDB); everything that talks to the sandbox (its own client, the Java
consumers, mqadmin) speaks what its servers require.

One piece (over 400 lines): the sandbox's start is one sequence (fetch, build, start, seed,
traffic) and its teardown undoes it in reverse; split, the order would be scattered.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from console import config as console_config
from console.domain.mqadmin import java_tls_properties
from console.rocketmq.admin import AdminClient
from console.sandbox import rundir
from console.sandbox import scenario as sc
from console.sandbox.cache import (
    LITE_CLIENT_VERSION,
    ROCKETMQ_VERSION,
    Distribution,
    cache_root,
    has_lite_topics,
)
from console.sandbox.certs import make_tls_files
from console.sandbox.cluster import (
    BROKER_NAMES,
    OFFSET_STORES,
    ClusterSetup,
    SandboxCluster,
    SandboxTls,
)
from console.sandbox.consumers import (
    ConsumerSpec,
    GrpcConsumerSpec,
    JavaConsumer,
    LiteClientSpec,
    ProgramSpec,
    wait_committed,
    wait_online,
)
from console.sandbox.jars import fetch_grpc_client, fetch_jars, fetch_proxy
from console.sandbox.javabuild import GRPC_CONSUMER_CLASS, LITE_CLIENT_CLASS, build_consumer
from console.sandbox.jvm import JvmOptions
from console.sandbox.lite_scenario import (
    GROUP_LITE,
    LITE_BROKER_KEYS,
    TOPIC_CHATS,
    LiteSeed,
    seed_lite,
)
from console.sandbox.mqadmin_oracle import Mqadmin
from console.sandbox.pidfile import PidFile
from console.sandbox.pids import rss_kb
from console.sandbox.pop import GROUP_GRPC, GROUP_POP, TOPIC_CLICKS, PopSeed, seed_pop
from console.sandbox.ports import ClusterPorts, default_ports
from console.sandbox.seed import SeedReport, seed_scenario
from console.sandbox.toolchain import find_tools
from console.sandbox.trickle import TrickleStats, trickle
from console.services.infra.access import open_admin
from console.services.read.open_reader import reader_for
from console.services.read.reader import ClusterReader

S = TypeVar("S")

#: How long the seeding and the live traffic wait for each answer (see `sandbox`).
SEED_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class SandboxOptions:
    run_dir: Path | None = None  # default <cache>/sandbox; wiped at start
    ports: ClusterPorts | None = None  # default 9876 / 10911 / 10921, as a stock install
    cache: Path | None = None  # default $RMQ_CONSOLE_CACHE or ~/.cache/rmq-console
    seed: bool = True  # create the scenario's topics, groups, messages and offsets
    live: bool = True  # keep the live consumers and the trickle producer running (needs seed)
    start_timeout: float = 120.0
    #: Also start a slave (broker id 1, its own JVM, store and ports) of this broker; with
    #: `ports` given, they must hold its port (free_ports(..., slaves=[name])).
    slave_of: str | None = None
    #: The RocketMQ release: its jars are fetched from Maven Central into the cache.
    version: str = ROCKETMQ_VERSION
    #: Every server enforces TLS (certificates of a CA made for this run, in its directory).
    tls: bool = False
    #: ... and requires a client certificate of that CA (mutual TLS).
    mutual_tls: bool = False
    #: With `tls`: the servers take plaintext as well (`tls.server.mode=permissive`), and the
    #: sandbox's own clients stay plaintext; `Sandbox.tls_offered` is how to speak TLS to it.
    tls_permissive: bool = False
    #: The brokers' consumer-offset store: a key of OFFSET_STORES.
    offset_store: str = "json"
    #: A store of its own for these brokers (name -> a key of OFFSET_STORES), `offset_store`
    #: for the others: a cluster half moved to RocksDB, as a rolling migration leaves it.
    offset_store_of: Mapping[str, str] = field(default_factory=dict)
    #: The brokers that hold the lite scenario's parent topic (None: every broker).
    lite_brokers: tuple[str, ...] | None = None
    #: Also run the proxy (cluster mode, its own JVM; of `version` from 5.5.0 on, 5.3.3's
    #: before) and RocketMQ 5's consumers: a remoting consumer in POP mode and a gRPC
    #: SimpleConsumer through the proxy (sandbox.pop), and from 5.5.0 on a lite group's
    #: producer and LitePushConsumer (sandbox.lite_scenario); with `live`, and without `seed`
    #: these alone. With `ports` given, they must plan the proxy's (free_ports(...,
    #: proxy=True)). With TLS, the proxy enforces it too (mutual on its remoting port).
    proxy: bool = False
    #: With the proxy and `live`: the POP groups and their consumers (off: the lite group alone).
    pop: bool = True
    #: The name server, brokers and proxy on both JIT compilers (JvmOptions.peak_jit), for a
    #: benchmark of the wire; otherwise they start and idle on the client compiler alone.
    peak_jit: bool = False


@dataclass(slots=True)
class Timings:
    """Seconds spent in each phase of bringing the sandbox up."""

    fetch: float = 0.0
    build: float = 0.0
    cluster_start: float = 0.0  # spawn until both brokers are registered
    seed: float = 0.0
    live_start: float = 0.0
    pop_start: float = 0.0  # the POP topic, its groups and their consumers (proxy only)
    lite_start: float = 0.0  # the lite group and its LiteClient (proxy, 5.5.0+ only)
    total: float = 0.0


class Sandbox:
    """A running sandbox: addresses, the seed report, and control over its processes."""

    def __init__(
        self,
        cluster: SandboxCluster,
        consumer_factory: _ConsumerFactory,
        mqadmin: Mqadmin,
        timings: Timings,
        distribution: Distribution | None = None,
        version: str = ROCKETMQ_VERSION,
    ) -> None:
        self.cluster = cluster
        self.distribution = distribution or mqadmin.dist
        self.version = version
        self.mqadmin = mqadmin
        self.timings = timings
        self.report: SeedReport | None = None
        self.trickle_stats = TrickleStats()
        self.consumers: dict[str, JavaConsumer] = {}  # live consumers, by group
        self._consumer_factory = consumer_factory
        #: The POP groups' topic as seeded, when the sandbox runs the proxy.
        self.pop: PopSeed | None = None
        #: The lite group as seeded, when the sandbox runs the proxy of 5.5.0 or later.
        self.lite: LiteSeed | None = None

    @property
    def proxy_addr(self) -> str | None:
        """The proxy's remoting address (None: no proxy): where its clients are listed."""
        return self.cluster.proxy_addr

    @property
    def proxy_grpc_addr(self) -> str | None:
        return self.cluster.proxy_grpc_addr

    @property
    def run_dir(self) -> Path:
        return self.cluster.config.run_dir

    @property
    def client_offset_dirs(self) -> tuple[str, ...]:
        """Where the sandbox's consumers keep client-local offsets (a BROADCASTING group's
        offsets.json): the console's `client_offset_dirs` for this cluster."""
        return tuple(sorted(str(p) for p in (self.run_dir / "consumers").glob("*/offsets")))

    @property
    def namesrv_addr(self) -> str:
        return self.cluster.namesrv_addr

    @property
    def broker_addrs(self) -> dict[str, str]:
        return self.cluster.broker_addrs

    @property
    def cluster_name(self) -> str:
        return self.cluster.cluster_name

    @property
    def tls(self) -> console_config.TlsRef | None:
        """The `tls:` a cluster config needs to reach this sandbox (None: plaintext will do)."""
        tls = self.cluster.config.tls
        return tls.client() if tls is not None and tls.enforcing else None

    @property
    def tls_offered(self) -> console_config.TlsRef | None:
        """The `tls:` that speaks TLS to this sandbox, required or not (None: no TLS)."""
        tls = self.cluster.config.tls
        return tls.client() if tls is not None else None

    def cluster_config(self, name: str = "sandbox") -> console_config.ClusterConfig:
        """This sandbox as a cluster of the console's config, its proxy named where it runs
        one (as an operator names it: the proxy lists its gRPC clients)."""
        proxies = (self.proxy_addr,) if self.proxy_addr is not None else ()
        return console_config.ClusterConfig(
            name=name,
            namesrv=(self.namesrv_addr,),
            tls=self.tls,
            proxies=proxies,
            rocketmq_cluster=self.cluster_name,
        )

    def config_entry(self, name: str = "sandbox", *, proxies: bool = True) -> dict[str, Any]:
        """This sandbox as an entry of a config file's `clusters:`, its proxy under
        `proxies:` where it runs one (unless `proxies` is off: a config that does not name
        it)."""
        entry: dict[str, Any] = {"name": name, "namesrv": [self.namesrv_addr]}
        if self.tls is not None:
            entry["tls"] = {k: v for k, v in self.tls.to_dict().items() if v is not None}
        if proxies and self.proxy_addr is not None:
            entry["proxies"] = [self.proxy_addr]
        return entry

    def reader(self, admin: AdminClient) -> ClusterReader:
        """The reader of this sandbox through `admin`, built as every door builds one from
        the cluster's config (console/services/read/open_reader.py): its proxy named."""
        return reader_for(admin, self.cluster_config())

    def admin(self, timeout: float = 3.0) -> AdminClient:
        """A new admin client for this sandbox (one that may write, speaking TLS when the
        sandbox does); use it as `async with sb.admin() as c:`."""
        return open_admin(self.cluster_config(), write=True, timeout=timeout)

    def pids(self) -> dict[str, int]:
        """Every process of the sandbox that runs now, by name."""
        pids = self.cluster.pids()
        for consumer in self._consumer_factory.started:
            if consumer.running and consumer.pid is not None:
                pids[consumer.process.name] = consumer.pid
        return pids

    def rss_kb(self) -> dict[str, int]:
        """Resident memory of each running JVM in KiB."""
        return {n: kb for n, pid in self.pids().items() if (kb := rss_kb(pid)) is not None}

    async def stop_broker(self, name: str) -> None:
        await self.cluster.stop_broker(name)

    async def start_broker(self, name: str, timeout: float = 60.0) -> None:
        await self.cluster.start_broker(name, timeout)

    async def start_consumer(self, plan: sc.GroupPlan) -> JavaConsumer:
        """Start one more SandboxConsumer as described by `plan`; stopped with the sandbox."""
        return await self._consumer_factory.launch(plan)

    async def start_pop_consumer(
        self, group: str, topic: str, *, orderly: bool = False
    ) -> JavaConsumer:
        """Start a remoting consumer that pops `topic` for `group` and acks what it is handed
        (set the group to POP on the brokers first: sandbox.pop.set_pop_mode), in order per
        queue with `orderly` (FIFO); stopped with the sandbox."""
        if not self.cluster.config.serves_pop:
            raise ValueError(
                "this sandbox's brokers serve no POP consumer (started without the proxy)"
            )
        factory = self._consumer_factory
        spec = ConsumerSpec(name=group, group=group, topics=(topic,), pop=True, orderly=orderly)
        return await factory.launch_program(spec, factory.classpath)

    async def start_grpc_consumer(self, group: str, topic: str, *, hold: int) -> JavaConsumer:
        """Start a gRPC SimpleConsumer of `group` on `topic` through the proxy that keeps the
        first `hold` messages it receives without acking them; stopped with the sandbox."""
        factory = self._consumer_factory
        if self.proxy_grpc_addr is None or factory.grpc_classpath is None:
            raise ValueError("this sandbox runs no proxy")
        spec = GrpcConsumerSpec(
            group, group, topic, self.proxy_grpc_addr, hold=hold, ssl=factory.grpc_tls
        )
        return await factory.launch_program(spec, factory.grpc_classpath)


@dataclass(slots=True)
class _ConsumerFactory:
    java: Path
    classpath: str
    namesrv: str
    run_dir: Path
    pidfile: PidFile
    started: list[JavaConsumer] = field(default_factory=list)
    #: System properties of every consumer's JVM (TLS).
    system_props: dict[str, str] = field(default_factory=dict)
    #: The gRPC consumer's classpath (its class and the gRPC client); None: no proxy.
    grpc_classpath: str | None = None
    #: The LiteClient's (its class and a gRPC client with lite topics); None: no lite group.
    lite_classpath: str | None = None
    #: The gRPC programs talk TLS to the proxy.
    grpc_tls: bool = False

    def create(self, plan: sc.GroupPlan) -> JavaConsumer:
        spec = ConsumerSpec(
            name=plan.name,
            group=plan.name,
            topics=(plan.topic,),
            model=plan.model,
            sleep_ms=plan.sleep_ms,
            fail_every=plan.fail_every,
            max_reconsume=plan.max_reconsume,
            orderly=plan.orderly,
            poison_key=plan.poison_key,
            pull_batch=plan.pull_batch,
            pull_threshold=plan.pull_threshold,
        )
        consumer = JavaConsumer(
            spec,
            java=self.java,
            classpath=self.classpath,
            namesrv=self.namesrv,
            run_dir=self.run_dir,
            pidfile=self.pidfile,
            jvm=JvmOptions(heap_mb=96, system_props=self.system_props),
        )
        self.started.append(consumer)
        return consumer

    async def launch(self, plan: sc.GroupPlan) -> JavaConsumer:
        consumer = self.create(plan)
        await consumer.start()
        return consumer

    async def launch_program(self, spec: ProgramSpec, classpath: str) -> JavaConsumer:
        """Start a consumer described by its own spec (a POP or gRPC consumer)."""
        consumer = JavaConsumer(
            spec,
            java=self.java,
            classpath=classpath,
            namesrv=self.namesrv,
            run_dir=self.run_dir,
            pidfile=self.pidfile,
            jvm=JvmOptions(heap_mb=96, system_props=self.system_props),
        )
        self.started.append(consumer)
        await consumer.start()
        return consumer

    async def stop_all(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.started if c.running))


@asynccontextmanager
async def sandbox(options: SandboxOptions | None = None) -> AsyncIterator[Sandbox]:
    """Bring the sandbox up (fetch jars, compile, start, seed, live traffic) and always down.

    Processes started here are stopped on exit, on cancellation (Ctrl-C), by the atexit hook if
    the loop dies, and by the kernel (PR_SET_PDEATHSIG) if this process is killed.
    """
    options = options or SandboxOptions()
    started = time.monotonic()
    sb, pidfile = await _prepare(options)
    background: list[asyncio.Task[Any]] = []
    try:
        sb.timings.cluster_start = await sb.cluster.start(options.start_timeout)
        info = rundir.SandboxInfo(sb.namesrv_addr, sb.cluster_name, sb.broker_addrs)
        rundir.write_info(sb.run_dir, info)
        # Seeding sends hundreds of messages at once to brokers just started, on a machine the
        # test streams load: 3 s was short of a first send's answer there (a send is not retried:
        # a timed-out one may have been stored, and the seed's offsets would be off by it).
        async with sb.admin(timeout=SEED_TIMEOUT_S) as admin:
            try:
                await _populate(sb, admin, options, background)
                sb.timings.total = time.monotonic() - started
                yield sb
            finally:
                await _cancel(background)
    finally:
        try:
            await sb._consumer_factory.stop_all()
            await sb.cluster.stop()
        except BaseException:
            # Cancelled again while stopping (a second Ctrl-C): stop without the event loop.
            for consumer in sb._consumer_factory.started:
                consumer.process.stop_now(2.0)
            sb.cluster.stop_now()
            raise
        finally:
            pidfile.release()


async def _prepare(options: SandboxOptions) -> tuple[Sandbox, PidFile]:
    """Everything before the first JVM: tools, jars, the compiled consumer, the run directory."""
    timings = Timings()
    tools = find_tools("javac")
    cache = options.cache or cache_root()
    for store in (options.offset_store, *options.offset_store_of.values()):
        if store not in OFFSET_STORES:
            known = ", ".join(OFFSET_STORES)
            raise ValueError(f"unknown offset store {store!r} (known: {known})")
    fetched = await fetch_jars(cache, version=options.version)
    timings.fetch = fetched.seconds
    dist = fetched.distribution
    t = time.monotonic()
    classes = await build_consumer(dist)
    proxy_dist = grpc_classpath = lite_classpath = None
    lite = has_lite_topics(options.version)
    if options.proxy:
        # The brokers' own release where it has lite topics (the proxy serves them from 5.5.0
        # on); 5.3.3's before, as the sandbox always ran.
        proxy_version = options.version if lite else ROCKETMQ_VERSION
        proxy_dist = (await fetch_proxy(cache, version=proxy_version)).distribution
        grpc = (await fetch_grpc_client(cache)).distribution
        grpc_classes = await build_consumer(grpc, GRPC_CONSUMER_CLASS)
        grpc_classpath = f"{grpc_classes}:{grpc.classpath}"
        if lite:
            lite_client = await fetch_grpc_client(cache, version=LITE_CLIENT_VERSION)
            lite_classes = await build_consumer(lite_client.distribution, LITE_CLIENT_CLASS)
            lite_classpath = f"{lite_classes}:{lite_client.distribution.classpath}"
    timings.build = time.monotonic() - t

    run_dir = (options.run_dir or rundir.default_run_dir(cache)).resolve()
    pidfile = await asyncio.to_thread(rundir.prepare, run_dir)
    slaves = [options.slave_of] if options.slave_of else []
    ports = options.ports or default_ports(BROKER_NAMES, slaves, proxy=options.proxy)
    if options.slave_of and options.slave_of not in ports.slaves:
        raise ValueError(f"no port planned for a slave of {options.slave_of!r}")
    if options.proxy and ports.proxy is None:
        raise ValueError("no port planned for the proxy (free_ports(..., proxy=True))")
    if not options.proxy:
        ports = replace(ports, proxy=None)
    tls = None
    if options.tls or options.mutual_tls:
        files = await asyncio.to_thread(make_tls_files, run_dir / "tls")
        tls = SandboxTls(files, mutual=options.mutual_tls, enforcing=not options.tls_permissive)
    extra = {**OFFSET_STORES[options.offset_store], **(LITE_BROKER_KEYS if lite else {})}
    extra_of = {name: OFFSET_STORES[store] for name, store in options.offset_store_of.items()}
    config = ClusterSetup(
        run_dir,
        ports,
        broker_extra=extra,
        broker_extra_of=extra_of,
        tls=tls,
        serves_pop=options.proxy,  # POP consumers come through the proxy, or with it
    )
    if options.peak_jit:
        config = config.with_peak_jit()
    cluster = SandboxCluster(dist, tools.java, config, proxy_dist)
    java_tls = java_tls_properties(tls.client()) if tls and tls.enforcing else {}
    factory = _ConsumerFactory(
        tools.java,
        f"{classes}:{dist.classpath}",
        cluster.namesrv_addr,
        run_dir,
        pidfile,
        system_props=java_tls,
        grpc_classpath=grpc_classpath,
        lite_classpath=lite_classpath,
        grpc_tls=bool(java_tls),
    )
    mqadmin = Mqadmin(
        tools.java, dist, cluster.namesrv_addr, run_dir / "mqadmin", system_props=java_tls
    )
    sb = Sandbox(cluster, factory, mqadmin, timings, dist, options.version)
    return sb, pidfile


async def _populate(
    sb: Sandbox, admin: AdminClient, options: SandboxOptions, background: list[asyncio.Task[Any]]
) -> None:
    """Seed the scenario and start the live consumers and the trickle producers; with the
    proxy, the POP groups and their consumers (with `seed` off, those alone)."""
    if options.seed:
        await _populate_scenario(sb, admin, options, background)
    if sb.proxy_grpc_addr is not None and options.live:
        if options.pop:
            t = time.monotonic()
            sb.pop = await seed_pop(admin, sb.broker_addrs, lambda g: _launch_pop(sb, g))
            sb.timings.pop_start = time.monotonic() - t
        if sb._consumer_factory.lite_classpath is not None:
            t = time.monotonic()
            sb.lite = await seed_lite(
                admin, sb.broker_addrs, lambda: _launch_lite(sb), parent_on=options.lite_brokers
            )
            sb.timings.lite_start = time.monotonic() - t


async def _populate_scenario(
    sb: Sandbox, admin: AdminClient, options: SandboxOptions, background: list[asyncio.Task[Any]]
) -> None:
    factory = sb._consumer_factory
    live = list(sc.live_groups())
    launching: list[asyncio.Task[JavaConsumer]] = []

    def launch_live() -> None:
        # Their JVMs boot while the rest of the scenario is seeded.
        launching.extend(asyncio.create_task(factory.launch(g)) for g in live)
        background.extend(launching)

    sb.report = await seed_scenario(
        admin, sb.broker_addrs, factory.launch, after_create=launch_live if options.live else None
    )
    sb.timings.seed = sb.report.seconds
    if not launching:
        return
    t = time.monotonic()
    consumers = await asyncio.gather(*launching)
    sb.consumers = {g.name: c for g, c in zip(live, consumers, strict=True)}
    await wait_online(admin, sb.broker_addrs, [g.name for g in live])
    await wait_committed(
        admin, sb.broker_addrs, live, {t.name: t.queues_per_broker for t in sc.TOPICS}
    )
    background.extend(
        asyncio.create_task(
            trickle(admin, sb.broker_addrs, sb.trickle_stats, rate),
            name=f"sandbox-trickle-{rate.topic}",
        )
        for rate in sc.TRICKLES
    )
    sb.timings.live_start = time.monotonic() - t


async def _launch_pop(sb: Sandbox, group: str) -> JavaConsumer:
    """One of sandbox.pop's two consumers: the remoting one in POP mode, or the gRPC one."""
    factory = sb._consumer_factory
    spec: ProgramSpec
    if group == GROUP_POP:
        spec = ConsumerSpec(name=group, group=group, topics=(TOPIC_CLICKS,), pop=True, hold=True)
        classpath = factory.classpath
    else:
        assert group == GROUP_GRPC
        assert sb.proxy_grpc_addr is not None
        assert factory.grpc_classpath is not None
        spec = GrpcConsumerSpec(
            group, group, TOPIC_CLICKS, sb.proxy_grpc_addr, hold=1_000_000, ssl=factory.grpc_tls
        )
        classpath = factory.grpc_classpath
    consumer = await factory.launch_program(spec, classpath)
    sb.consumers[group] = consumer
    return consumer


async def _launch_lite(sb: Sandbox) -> JavaConsumer:
    """sandbox.lite_scenario's LiteClient: the lite producer and the group's LitePushConsumer."""
    factory = sb._consumer_factory
    assert sb.proxy_grpc_addr is not None
    assert factory.lite_classpath is not None
    spec = LiteClientSpec(
        GROUP_LITE, GROUP_LITE, TOPIC_CHATS, sb.proxy_grpc_addr, ssl=factory.grpc_tls
    )
    consumer = await factory.launch_program(spec, factory.lite_classpath)
    sb.consumers[GROUP_LITE] = consumer
    return consumer


async def _cancel(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def serve(
    options: SandboxOptions | None = None,
    on_ready: Callable[[Sandbox], None] | None = None,
) -> None:
    """Run the sandbox until cancelled (Ctrl-C) or sent SIGTERM/SIGHUP, then tear it down.

    `rmq-console sandbox up` is `asyncio.run(serve(...))`; SIGTERM is what `sandbox down`
    sends to this process.
    """
    await serve_context(lambda: sandbox(options), on_ready)


async def serve_context(
    open_context: Callable[[], AbstractAsyncContextManager[S]],
    on_ready: Callable[[S], None] | None = None,
) -> None:
    """`serve` for any sandbox's async context (the ACL cluster's too)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    installed: list[signal.Signals] = []
    received: list[signal.Signals] = []

    def on_signal(sig: signal.Signals) -> None:
        received.append(sig)
        if task is not None:
            task.cancel()

    if task is not None and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, on_signal, sig)
            installed.append(sig)
    try:
        async with open_context() as sb:
            if on_ready is not None:
                on_ready(sb)
            await asyncio.Event().wait()
    except asyncio.CancelledError:
        if not received or task is None:
            raise
        task.uncancel()  # a stop request, not an error: the context has torn everything down
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)

"""`sandbox fetch|up|down|status`: argument parsing and output, for both CLIs.

`rmq-console sandbox ...` (console/cli/sandbox.py) and `python -m console.sandbox ...` share
this.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from console.sandbox import rundir
from console.sandbox import scenario as sc
from console.sandbox.acl import ACL_GROUP, ACL_TOPIC, acl_sandbox
from console.sandbox.cache import LITE_CLIENT_VERSION, ROCKETMQ_VERSION, has_lite_topics
from console.sandbox.cluster import BROKER_NAMES, OFFSET_STORES
from console.sandbox.errors import SandboxError
from console.sandbox.jars import fetch_grpc_client, fetch_jars, fetch_proxy
from console.sandbox.lite_scenario import GROUP_LITE, TOPIC_CHATS
from console.sandbox.pop import GROUP_GRPC, GROUP_POP, TOPIC_CLICKS
from console.sandbox.ports import free_ports

if TYPE_CHECKING:
    from console.sandbox.acl import AclOptions, AclSandbox
    from console.sandbox.controller_cluster import ControllerOptions, ControllerSandbox
    from console.sandbox.dledger_cluster import DLedgerOptions, DLedgerSandbox
    from console.sandbox.runner import Sandbox, SandboxOptions

# The runner, the seed and the process code load only when a sandbox command runs, so that
# `rmq-console lag` and friends do not pay for them at start-up.


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="sandbox_command", required=True)
    fetch = sub.add_parser(
        "fetch",
        help="download the RocketMQ jars (and the proxy's, the gRPC client's) into the cache",
    )
    fetch.add_argument("--cache", type=Path, help="cache directory (default ~/.cache/rmq-console)")
    fetch.add_argument("--force", action="store_true", help="download again even if cached")
    version_help = f"the RocketMQ release, its jars from Maven Central (default {ROCKETMQ_VERSION})"
    fetch.add_argument("--version", default=ROCKETMQ_VERSION, help=version_help)
    up = sub.add_parser("up", help="start a seeded local cluster and keep it running")
    up.add_argument("--cache", type=Path)
    up.add_argument("--version", default=ROCKETMQ_VERSION, help=version_help)
    up.add_argument(
        "--tls",
        action="store_true",
        help="every server enforces TLS, with certificates of a CA made for this run",
    )
    up.add_argument(
        "--mutual-tls",
        action="store_true",
        help="as --tls, and every client must present a certificate of that CA",
    )
    up.add_argument(
        "--offset-store",
        choices=list(OFFSET_STORES),
        default="json",
        help="the brokers' consumer-offset store (rocksdb: configManagerVersion=v2, 5.3.2+)",
    )
    up.add_argument("--run-dir", type=Path, help="where stores and logs go (wiped at start)")
    up.add_argument("--free-ports", action="store_true", help="random free ports, not 9876")
    up.add_argument("--no-seed", action="store_true", help="start an empty cluster")
    up.add_argument(
        "--no-proxy",
        action="store_true",
        help="without the proxy and RocketMQ 5's consumers (a POP group, a gRPC group, and "
        "from 5.5.0 on a lite group)",
    )
    up.add_argument(
        "--slave",
        metavar="BROKER",
        choices=list(BROKER_NAMES),
        help="also start a slave (broker id 1, its own process, store and ports) of BROKER",
    )
    up.add_argument(
        "--controller",
        action="store_true",
        help="instead, a separate cluster in controller mode: a name server, a controller and "
        "two replicas of each broker, the master elected (free ports, run dir "
        "<cache>/sandbox-controller)",
    )
    up.add_argument(
        "--dledger",
        action="store_true",
        help="instead, a separate RocketMQ 4.9.7 cluster in DLedger mode: a name server and "
        "three peers of one broker that elect its master (free ports, run dir "
        "<cache>/sandbox-dledger)",
    )
    up.add_argument(
        "--acl",
        action="store_true",
        help="instead, a separate cluster whose broker requires ACL 2.0 signatures (one broker, "
        "free ports, run dir <cache>/sandbox-acl)",
    )
    for name, text in (("down", "stop a running sandbox"), ("status", "show a sandbox")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--run-dir", type=Path)


def run(args: argparse.Namespace) -> int:
    # deferred: cryptography (the sandbox's TLS certificates)
    from console.sandbox.runner import SandboxOptions

    try:
        match args.sandbox_command:
            case "fetch":
                return cmd_fetch(args.cache, force=args.force, version=args.version)
            case "up" if args.acl:
                # deferred: cryptography (the sandbox's TLS certificates)
                from console.sandbox.acl import AclOptions

                return cmd_up_acl(
                    AclOptions(run_dir=args.run_dir, cache=args.cache, seed=not args.no_seed)
                )
            case "up" if args.controller:
                # deferred: the controller sandbox's processes and seed
                from console.sandbox.controller_cluster import ControllerOptions

                return cmd_up_controller(
                    ControllerOptions(run_dir=args.run_dir, cache=args.cache, seed=not args.no_seed)
                )
            case "up" if args.dledger:
                # deferred: the DLedger sandbox's processes and seed
                from console.sandbox.dledger_cluster import DLedgerOptions

                return cmd_up_dledger(
                    DLedgerOptions(run_dir=args.run_dir, cache=args.cache, seed=not args.no_seed)
                )
            case "up":
                slaves = [args.slave] if args.slave else []
                proxy = not args.no_proxy
                options = SandboxOptions(
                    run_dir=args.run_dir,
                    cache=args.cache,
                    ports=free_ports(BROKER_NAMES, slaves=slaves, proxy=proxy)
                    if args.free_ports
                    else None,
                    seed=not args.no_seed,
                    live=not args.no_seed,
                    slave_of=args.slave,
                    version=args.version,
                    tls=args.tls,
                    mutual_tls=args.mutual_tls,
                    offset_store=args.offset_store,
                    proxy=proxy,
                )
                return cmd_up(options)
            case "down":
                return cmd_down(args.run_dir)
            case "status":
                return cmd_status(args.run_dir)
    except SandboxError as exc:
        print(f"error: {exc}")
        return 1
    raise ValueError(f"unknown sandbox command {args.sandbox_command!r}")


def cmd_fetch(cache: Path | None = None, *, force: bool = False, version: str | None = None) -> int:
    """The brokers' jars of `version`, the proxy's and the gRPC client's (each a directory of
    its own): the default release's, and from 5.5.0 on the release's own proxy and the gRPC
    client that has lite topics, which its sandbox runs."""
    version = version or ROCKETMQ_VERSION
    results = [asyncio.run(fetch_jars(cache, force=force, version=version))]
    if version == ROCKETMQ_VERSION or has_lite_topics(version):
        results += [
            asyncio.run(fetch_proxy(cache, force=force, version=version)),
            asyncio.run(fetch_grpc_client(cache, force=force)),
        ]
    if has_lite_topics(version):
        results.append(
            asyncio.run(fetch_grpc_client(cache, force=force, version=LITE_CLIENT_VERSION))
        )
    for result in results:
        verb = "downloaded" if result.downloaded else "already cached"
        lib, took = result.distribution.lib, result.seconds
        print(f"{result.jar_count} jars {verb} in {lib} ({took:.1f}s)")
    return 0


def cmd_up(options: SandboxOptions) -> int:
    # deferred: cryptography (the sandbox's TLS certificates)
    from console.sandbox.runner import serve

    try:
        asyncio.run(serve(options, on_ready=print_ready))
    except KeyboardInterrupt:
        pass
    print("sandbox stopped")
    return 0


S = TypeVar("S")


def _serve_until_stopped(
    open_cluster: Callable[[], AbstractAsyncContextManager[S]],
    on_ready: Callable[[S], None],
    what: str,
) -> int:
    """Run a cluster of its own until Ctrl-C (or `sandbox down`), then say `what` stopped."""
    # deferred: cryptography (the sandbox's TLS certificates)
    from console.sandbox.runner import serve_context

    try:
        asyncio.run(serve_context(open_cluster, on_ready=on_ready))
    except KeyboardInterrupt:
        pass
    print(f"{what} stopped")
    return 0


def cmd_up_acl(options: AclOptions) -> int:
    return _serve_until_stopped(lambda: acl_sandbox(options), print_acl_ready, "ACL cluster")


def cmd_up_controller(options: ControllerOptions) -> int:
    # deferred: the processes and the seed
    from console.sandbox.controller_cluster import controller_sandbox

    return _serve_until_stopped(
        lambda: controller_sandbox(options), print_controller_ready, "controller-mode cluster"
    )


def cmd_down(run_dir: Path | None = None) -> int:
    pids = rundir.down(run_dir)
    print(f"stopped {len(pids)} process(es)" if pids else "no sandbox running")
    return 0


def cmd_status(run_dir: Path | None = None) -> int:
    st = rundir.status(run_dir)
    print(f"run dir: {st.run_dir}")
    print(f"owner:   {st.owner if st.owner is not None else 'not running'}")
    if st.info is not None:
        when = "" if st.running else " (last run)"
        print(f"namesrv: {st.info.namesrv}  cluster: {st.info.cluster}{when}")
    for name, (pid, alive) in sorted(st.processes.items()):
        print(f"  {name:<28} pid {pid:<8} {'running' if alive else 'gone'}")
    return 0 if st.running else 3


def print_ready(sb: Sandbox) -> None:
    t = sb.timings
    print(f"RocketMQ {sb.version} sandbox up: namesrv {sb.namesrv_addr}, cluster {sb.cluster_name}")
    for name, addr in sorted(sb.broker_addrs.items()):
        print(f"  {name}: {addr}")
    for name, addr in sorted(sb.cluster.slave_addrs.items()):
        print(f"  {name} slave (broker id 1): {addr}")
    if sb.proxy_addr is not None:
        print(f"  proxy: {sb.proxy_addr} (remoting), {sb.proxy_grpc_addr} (gRPC)")
    for name, url in sorted(sb.cluster.metrics_urls.items()):
        print(f"  {name} metrics: {url}")
    print(
        f"  took {t.total:.1f}s (jars {t.fetch:.1f}s, build {t.build:.1f}s, cluster "
        f"{t.cluster_start:.1f}s, seed {t.seed:.1f}s, live {t.live_start:.1f}s"
        + (f", POP {t.pop_start:.1f}s" if sb.pop is not None else "")
        + (f", lite {t.lite_start:.1f}s" if sb.lite is not None else "")
        + ")"
    )
    if sb.report is not None:
        phases = ", ".join(f"{k} {v:.1f}s" for k, v in sb.report.phases.items())
        print(f"  seed: {phases}; retry backlog {sb.report.retry_backlog}, ", end="")
        print(f"dead letters {sb.report.dead_letters}")
        for mq, offset in sb.report.poisoned.items():
            print(
                f"  poison message: {mq.topic} {mq.broker_name} queue {mq.queue_id} offset "
                f"{offset} ({sc.GROUP_POISON} is stuck there)"
            )
        print("  groups:")
        for g in sc.GROUPS:
            print(f"    {g.name:<18} {g.topic:<9} {g.demonstrates}")
        if sb.pop is not None:
            held = sb.pop.messages
            print(f"    {GROUP_POP:<18} {TOPIC_CLICKS:<9} POP (remoting): popped {held}, acked 0")
            print(
                f"    {GROUP_GRPC:<18} {TOPIC_CLICKS:<9} POP through the proxy (gRPC): "
                f"received {held}, acked none"
            )
    if sb.lite is not None:
        behind = ", ".join(f"{t} {n}" for t, n in sb.lite.lags.items() if n)
        print(
            f"    {GROUP_LITE:<18} {TOPIC_CHATS:<9} lite (LitePushConsumer through the proxy): "
            f"lag {sb.lite.total_lag} ({behind})"
        )
    if sb.tls is not None:
        print_tls_block(sb)
    else:
        print("  try:")
        metrics = tuple(sorted(sb.cluster.metrics_urls.values()))
        for line in example_commands(sb.namesrv_addr, sb.proxy_addr, metrics):
            print(f"    {line}")
    print(f"  logs and stores: {sb.run_dir}")
    print("Ctrl-C (or `rmq-console sandbox down`) stops it.", flush=True)


def example_commands(namesrv: str, proxy: str | None, metrics: Sequence[str] = ()) -> list[str]:
    """Commands that read the sandbox, with what they need of it: its proxy (`--proxy`, where
    its gRPC group's clients are listed) and its brokers' metrics (what that group popped)."""
    target = f"--namesrv {namesrv}"
    if proxy is not None:
        target += f" --proxy {proxy}"
    if metrics:
        target += f" --broker-metrics '{';'.join(metrics)}'"
    lines = [f"rmq-console {target}", f"rmq-console groups {target}"]
    group = GROUP_GRPC if proxy is not None else sc.GROUPS[0].name
    lines.append(f"rmq-console lag -g {group} {target}")
    return lines


def print_tls_block(sb: Sandbox) -> None:
    """The config entry that reaches a TLS sandbox: file paths, never a key's content."""
    tls = sb.tls
    assert tls is not None
    mutual = " (mutual: clients present a certificate)" if tls.cert else ""
    print(f"  every server enforces TLS{mutual}; a config entry for it:")
    print("    clusters:")
    print("      - name: sandbox")
    print(f"        namesrv: {sb.namesrv_addr}")
    if sb.proxy_addr is not None:
        print(f"        proxies: [{sb.proxy_addr}]")
    print("        tls:")
    for key in ("ca", "cert", "key"):
        value = getattr(tls, key)
        if value is not None:
            print(f"          {key}: {value}")
    if not tls.cert:  # the command line has no client certificate: mutual TLS needs the config
        print(f"  or: rmq-console lag -g GROUP --namesrv {sb.namesrv_addr} --tls-ca {tls.ca}")


def print_acl_ready(acl: AclSandbox) -> None:
    """Where the cluster is and how a config reaches it, by reference: the password is never
    printed, only the file that holds it."""

    print(f"RocketMQ ACL cluster up: namesrv {acl.namesrv_addr}, cluster {acl.cluster_name}")
    for name, addr in sorted(acl.broker_addrs.items()):
        print(f"  {name}: {addr} (ACL 2.0 authentication on)")
    print(f"  user {acl.user.username}; keys in {acl.access_key_file} and {acl.secret_key_file}")
    if acl.seed is not None:
        print(f"  seeded: topic {ACL_TOPIC}, group {ACL_GROUP} (committed at half of every queue)")
    print("  a config entry for it:")
    print("    clusters:")
    print("      - name: acl")
    print(f"        namesrv: {acl.namesrv_addr}")
    print("        credentials:")
    print(f"          access_key: file:{acl.access_key_file}")
    print(f"          secret_key: file:{acl.secret_key_file}")
    print(f"  logs and stores: {acl.run_dir}")
    print(f"Ctrl-C (or `rmq-console sandbox down --run-dir {acl.run_dir}`) stops it.", flush=True)


def cmd_up_dledger(options: DLedgerOptions) -> int:
    # deferred: the processes and the seed
    from console.sandbox.dledger_cluster import dledger_sandbox

    return _serve_until_stopped(
        lambda: dledger_sandbox(options), print_dledger_ready, "DLedger cluster"
    )


def print_dledger_ready(sb: DLedgerSandbox) -> None:
    """Where the cluster is, which peer was elected, and how to make it elect another."""
    print(
        f"RocketMQ 4.9.7 DLedger cluster up: namesrv {sb.namesrv_addr}, cluster {sb.cluster_name}"
    )
    pids = sb.pids()
    for peer in sb.peers:
        print(f"  {peer} ({sb.broker}): {sb.addr_of(peer)}, pid {pids.get(peer, '?')}")
    if sb.seed is not None:
        print(f"  seeded: topic {sb.seed.topic}, group {sb.seed.group}, on every peer")
    print("  try:")
    print(f"    rmq-console brokers --namesrv {sb.namesrv_addr}")
    if sb.seed is not None:
        print(f"    rmq-console lag -g {sb.seed.group} --namesrv {sb.namesrv_addr}")
    print("    kill -9 the PID of the master: the other two peers elect one of them")
    print(f"  logs and stores: {sb.run_dir}")
    print(f"Ctrl-C (or `rmq-console sandbox down --run-dir {sb.run_dir}`) stops it.", flush=True)


def print_controller_ready(sb: ControllerSandbox) -> None:
    """Where the cluster is, which replica each set elected, and how to make it switch."""
    print(
        f"RocketMQ controller-mode cluster up: namesrv {sb.namesrv_addr}, cluster "
        f"{sb.cluster_name}, controller {sb.controller_addr}"
    )
    pids = sb.pids()
    for broker in sb.brokers:
        for replica in sb.replicas(broker):
            print(f"  {replica} ({broker}): {sb.addr_of(replica)}, pid {pids.get(replica, '?')}")
    if sb.seed is not None:
        print(f"  seeded: topic {sb.seed.topic}, group {sb.seed.group}, on every replica")
    print("  try:")
    print(f"    rmq-console brokers --namesrv {sb.namesrv_addr}")
    if sb.seed is not None:
        print(f"    rmq-console lag -g {sb.seed.group} --namesrv {sb.namesrv_addr}")
    print("    kill -9 the PID of a set's master: the controller elects the other replica")
    print(f"  logs and stores: {sb.run_dir}")
    print(f"Ctrl-C (or `rmq-console sandbox down --run-dir {sb.run_dir}`) stops it.", flush=True)

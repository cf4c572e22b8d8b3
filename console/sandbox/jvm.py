"""Command lines for the JVMs the sandbox runs (namesrv, brokers, consumers, mqadmin)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# RocketMQ 5.x touches JDK internals (mapped-file cleaner, direct buffers); JDK 17 refuses without
# these, and the broker then fails to unmap its store files at shutdown.
JDK_OPENS: tuple[str, ...] = (
    "--add-opens",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang=ALL-UNNAMED",
    "--add-exports",
    "java.base/sun.nio.ch=ALL-UNNAMED",
)

NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"
BROKER_MAIN = "org.apache.rocketmq.broker.BrokerStartup"
PROXY_MAIN = "org.apache.rocketmq.proxy.ProxyStartup"
MQADMIN_MAIN = "org.apache.rocketmq.tools.command.MQAdminStartup"

# Environment a developer may have set for a real cluster; it must not leak into the sandbox.
_SCRUBBED_ENV = ("NAMESRV_ADDR", "ROCKETMQ_HOME", "JAVA_OPTS", "JAVA_OPT_EXT")


@dataclass(frozen=True, slots=True)
class JvmOptions:
    heap_mb: int
    direct_mb: int | None = None
    system_props: Mapping[str, str] = field(default_factory=dict)
    extra: Sequence[str] = ()
    #: Both JIT compilers, for the throughput of a long busy run (a benchmark). Off, the client
    #: compiler alone (-XX:TieredStopAtLevel=1): a sandbox JVM serves little traffic, and C2's
    #: compiling is a good part of what it spends starting and idling (a 5.3.3 sandbox measured
    #: 53 CPU-s to start and 23 a minute idle with both, 44 and 19 with C1 alone, its brokers'
    #: timer-wheel flush slowed as console.sandbox.cluster sets it).
    peak_jit: bool = False


def java_argv(
    java: Path,
    classpath: str,
    main_class: str,
    args: Sequence[str],
    *,
    options: JvmOptions,
    home: Path,
) -> list[str]:
    """`java` with a small fixed heap, the JDK 17 opens, and user.home pointed at `home`.

    RocketMQ writes its logs to ${user.home}/logs/rocketmqlogs, so a per-process home keeps each
    JVM's logs apart and out of the developer's real home.
    """
    argv = [str(java), f"-Xms{options.heap_mb}m", f"-Xmx{options.heap_mb}m"]
    if options.direct_mb is not None:
        argv.append(f"-XX:MaxDirectMemorySize={options.direct_mb}m")
    # The serial collector has no background GC threads: less CPU taken from sibling JVMs
    # on a small machine, and these heaps are tiny anyway.
    argv.append("-XX:+UseSerialGC")
    if not options.peak_jit:
        argv.append("-XX:TieredStopAtLevel=1")
    argv += [*options.extra, *JDK_OPENS, f"-Duser.home={home}"]
    argv += [f"-D{k}={v}" for k, v in sorted(options.system_props.items())]
    argv += ["-cp", classpath, main_class, *args]
    return argv


def jvm_env(rocketmq_home: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment with ROCKETMQ_HOME set to an (empty) sandbox directory.

    5.x start-up exits when ROCKETMQ_HOME is unset, but finds its logging configuration inside
    the jars, so an empty directory is enough.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items()}
    for key in _SCRUBBED_ENV:
        env.pop(key, None)
    env["ROCKETMQ_HOME"] = str(rocketmq_home)
    return env

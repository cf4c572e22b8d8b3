"""Port plans for the sandbox: fixed defaults for the demo, free ports for tests."""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class ClusterPorts:
    namesrv: int
    brokers: dict[str, int]  # broker name -> listenPort
    #: A slave (broker id 1) of a broker: master's broker name -> the slave's listenPort.
    slaves: dict[str, int] = field(default_factory=dict)
    #: The proxy's remoting port, its gRPC port the next one; None: no proxy.
    proxy: int | None = None
    #: Where each broker exports its metrics for Prometheus (broker name -> HTTP port).
    metrics: dict[str, int] = field(default_factory=dict)

    def all_ports(self) -> list[int]:
        ports = [self.namesrv]
        for listen in [*self.brokers.values(), *self.slaves.values()]:
            ports += broker_ports(listen)
        if self.proxy is not None:
            ports += proxy_ports(self.proxy)
        return ports + list(self.metrics.values())

    @property
    def proxy_grpc(self) -> int | None:
        return None if self.proxy is None else self.proxy + 1


def broker_ports(listen_port: int) -> list[int]:
    """A broker also opens listenPort-2 (the "VIP" channel) and listenPort+1 (HA replication)."""
    return [listen_port - 2, listen_port, listen_port + 1]


def proxy_ports(remoting_port: int) -> list[int]:
    """A proxy listens for remoting clients on its port and for gRPC clients on the next."""
    return [remoting_port, remoting_port + 1]


def default_ports(
    broker_names: Sequence[str], slaves: Sequence[str] = (), *, proxy: bool = False
) -> ClusterPorts:
    """A stock install's ports (9876, 10911, a proxy's 8080 and 8081, a broker's metrics 5557)
    so a demo looks familiar; brokers 10 apart, then the slaves (of the brokers named in
    `slaves`). With the proxy, the brokers export their metrics (5557, 5558, ...)."""
    brokers = {name: 10911 + 10 * i for i, name in enumerate(broker_names)}
    after = 10911 + 10 * len(brokers)
    slave_ports = {name: after + 10 * i for i, name in enumerate(slaves)}
    metrics = {name: 5557 + i for i, name in enumerate(broker_names)} if proxy else {}
    return ClusterPorts(9876, brokers, slave_ports, 8080 if proxy else None, metrics)


def free_ports(
    broker_names: Sequence[str],
    rng: random.Random | None = None,
    attempts: int = 200,
    *,
    slaves: Sequence[str] = (),
    proxy: bool = False,
) -> ClusterPorts:
    """Random ports that are free right now, below the Linux ephemeral range (32768+), and
    reserved for this process until it exits.

    Staying below the ephemeral range means the kernel will not hand one of them to an outgoing
    connection between this check and the JVM's bind. The reservation (reserve()) keeps another
    process choosing ports at the same time (a second test stream, a second sandbox) from being
    handed the same ones in the seconds before the JVMs bind them.
    """
    rng = rng or random.Random()
    taken: set[int] = set()

    def pick(width: int) -> int:
        for _ in range(attempts):
            base = rng.randrange(20000, 32000 - width)
            block = list(range(base, base + width))
            if taken.intersection(block) or not all(port_free(p) for p in block):
                continue
            if reserve(block):
                taken.update(block)
                return base
        raise RuntimeError(f"no {width} consecutive free ports found after {attempts} tries")

    namesrv = pick(1)
    brokers = {name: pick(4) + 2 for name in broker_names}  # block = listen-2 .. listen+1
    unknown = [name for name in slaves if name not in brokers]
    if unknown:
        raise ValueError(f"a slave needs its master among the brokers: {', '.join(unknown)}")
    slave_ports = {name: pick(4) + 2 for name in slaves}
    proxy_port = pick(2) if proxy else None
    # With the proxy, the brokers export their metrics: its gRPC groups' in-flight count.
    metrics = {name: pick(1) for name in broker_names} if proxy else {}
    return ClusterPorts(namesrv, brokers, slave_ports, proxy_port, metrics)


def port_free(port: int) -> bool:
    """True when nothing listens on the port on loopback nor on the wildcard address.

    The broker's HA port ignores bindAddress and binds the wildcard, hence both checks.
    """
    for host in (LOOPBACK, "0.0.0.0"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                return False
    return True


#: Ports this process reserved: port -> the open lock file that holds it.
_reserved: dict[int, int] = {}


def reservations_dir() -> str:
    """Where the reservations of this machine's processes (of this user) are kept."""
    path = os.path.join(tempfile.gettempdir(), f"rmq-console-ports-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def reserve(block: Sequence[int]) -> bool:
    """Reserve every port of `block` for this process, or none of them: False when another
    process, or an earlier call of this one, holds one. A reservation is an exclusive lock on a
    file named after the port, so it ends with the process that holds it, however that ends."""
    where = reservations_dir()
    held: list[tuple[int, int]] = []
    for port in block:
        if port in _reserved:
            break
        fd = os.open(os.path.join(where, str(port)), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            break
        held.append((port, fd))
    else:
        _reserved.update(held)
        return True
    for _, fd in held:
        os.close(fd)
    return False

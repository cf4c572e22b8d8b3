"""Port plans for the sandbox: fixed defaults for the demo, free ports for tests."""

from __future__ import annotations

import random
import socket
from collections.abc import Sequence
from dataclasses import dataclass

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class ClusterPorts:
    namesrv: int
    brokers: dict[str, int]  # broker name -> listenPort

    def all_ports(self) -> list[int]:
        ports = [self.namesrv]
        for listen in self.brokers.values():
            ports += broker_ports(listen)
        return ports


def broker_ports(listen_port: int) -> list[int]:
    """A broker also opens listenPort-2 (the "VIP" channel) and listenPort+1 (HA replication)."""
    return [listen_port - 2, listen_port, listen_port + 1]


def default_ports(broker_names: Sequence[str]) -> ClusterPorts:
    """A stock install's ports (9876, 10911) so a demo looks familiar; brokers 10 apart."""
    return ClusterPorts(9876, {name: 10911 + 10 * i for i, name in enumerate(broker_names)})


def free_ports(
    broker_names: Sequence[str], rng: random.Random | None = None, attempts: int = 200
) -> ClusterPorts:
    """Random ports that are free right now, below the Linux ephemeral range (32768+).

    Staying below the ephemeral range means the kernel will not hand one of them to an outgoing
    connection between this check and the JVM's bind.
    """
    rng = rng or random.Random()
    taken: set[int] = set()

    def pick(width: int) -> int:
        for _ in range(attempts):
            base = rng.randrange(20000, 32000 - width)
            block = list(range(base, base + width))
            if not taken.intersection(block) and all(port_free(p) for p in block):
                taken.update(block)
                return base
        raise RuntimeError(f"no {width} consecutive free ports found after {attempts} tries")

    namesrv = pick(1)
    brokers = {name: pick(4) + 2 for name in broker_names}  # block = listen-2 .. listen+1
    return ClusterPorts(namesrv, brokers)


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

"""Proxies found where nobody named them: a host the brokers list is asked on the proxy's port
for the route of the proxies' own topic; only a server answering with this cluster's brokers is
taken for its proxy. (Against a real proxy: tests/integration/test_proxied_cluster_doors.py.)"""

from __future__ import annotations

import asyncio
import json
import socket

from console.rocketmq import frame
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import FLAG_RESPONSE
from console.rocketmq.frame import Command
from console.services.read.proxy_finder import PROXY_TOPIC, find_proxies
from tests.support.servers import Handler, serve


def _routes(*brokers: str) -> Handler:
    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        assert cmd.ext_fields["topic"] == PROXY_TOPIC
        body = {
            "brokerDatas": [
                {"brokerName": b, "cluster": "C", "brokerAddrs": {"0": "127.0.0.1:1"}}
                for b in brokers
            ],
            "queueDatas": [],
        }
        reply = Command(
            code=0, opaque=cmd.opaque, flag=FLAG_RESPONSE, body=json.dumps(body).encode()
        )
        writer.write(frame.encode(reply))

    return handler


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_proxy_of_the_cluster_is_found_and_others_are_named_with_why() -> None:
    async with serve(_routes("broker-a", "broker-b")) as ours, AdminClient(ours) as admin:
        port = int(ours.rpartition(":")[2])
        found = await find_proxies(admin, ["127.0.0.1"], port, {"broker-a", "broker-b"})
        assert (found.found, found.missed) == ((ours,), ())
        assert found.found_lines() == [
            f"proxy {ours} found (the brokers list it; no proxies: configured)"
        ]
        # The same server, for a cluster of other brokers: not its proxy.
        other = await find_proxies(admin, ["127.0.0.1"], port, {"broker-x"})
        assert other.found == ()
        assert other.missed == ((ours, "it answers for other brokers (broker-a, broker-b)"),)
        closed = _closed_port()
        nobody = await find_proxies(admin, ["127.0.0.1"], closed, {"broker-a"})
        assert nobody.found == ()
        ((addr, why),) = nobody.missed
        assert addr == f"127.0.0.1:{closed}"
        assert why.startswith(f"cannot connect to 127.0.0.1:{closed}")
        assert nobody.missed_text().startswith(f"none answered at 127.0.0.1:{closed}: ")

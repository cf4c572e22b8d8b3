"""The group screen of a RocketMQ 5 group: its consumption in the headline, its popped and not
acked messages in its lag, each client's way in (remoting, or gRPC through which proxy), and a
client a broker lists on several connections."""

from __future__ import annotations

from dataclasses import replace

from console.domain.offsets import Client, Consumption, Ghost, Kind, PopInFlight

from .fakes import CLIENT_A, FakeCluster, fake_app
from .helpers import open_billing, shown, text_of

PROXY = "10.0.0.5:8080"


async def test_a_pop_group_says_how_it_consumes_what_it_holds_and_who_is_listed_twice() -> None:
    fake = FakeCluster()
    grpc = Client("vm@1@0@x", "10.0.0.7:4000", "JAVA", 479, proxy=PROXY)
    fake.groups["billing"] = replace(
        fake.groups["billing"],
        clients=(CLIENT_A, grpc),
        consumption=Consumption((Kind.POP,), remoting=True, grpc=True),
        pop_in_flight=(PopInFlight("orders", "broker-a", 7, "clients' running info"),),
        ghosts=(Ghost("broker-b", CLIENT_A.client_id, 3),),
    )
    app, _ = fake_app(fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_billing(pilot)
        summary = " ".join(text_of(app, "#summary").replace("\u00a0", " ").split())
        assert "clu pop/grpc+rem" in summary
        # 100 + 0 + 20 on the queues, and the 7 popped and not acked.
        assert "lag 127" in summary
        assert "POP: 7 popped and not acked (broker-a 7; clients' running info)" in summary
        assert f"broker-b lists client {CLIENT_A.client_id} on 3 connections" in summary
        via = {r["client"]: r["via"] for r in shown(app, "#clients")}
        assert via == {
            CLIENT_A.client_id: "remoting (3 conns on broker-b)",
            "vm@1@0@x": f"grpc {PROXY}",
        }

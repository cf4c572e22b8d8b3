"""The group screen: queues with unknown lag spelled out, retry and DLQ, clients, sparkline."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Sparkline

from console.domain.offsets import ClientStore
from console.ui.screens.group import GroupScreen

from .fakes import fake_app, q
from .helpers import open_billing, settle, shown, text_of


async def test_queue_table() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_billing(pilot)
        rows = {(r["topic"], r["broker"], r["queue"]): r for r in shown(app, "#queues")}
        a0 = rows[("orders", "broker-a", "0")]
        assert (a0["min"], a0["max"], a0["committed"], a0["inflight"], a0["lag"]) == (
            "0",
            "1200",
            "1100",
            "30",
            "100",
        )
        assert a0["behind"] == "1m35s"
        assert a0["last"] == "30s"
        assert a0["client"] == "10.0.0.5@4242#1"
        caught_up = rows[("orders", "broker-a", "1")]
        assert (caught_up["lag"], caught_up["behind"]) == ("0", "0s")


async def test_nothing_committed_reads_unknown_never_zero() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_billing(pilot)
        row = next(
            r for r in shown(app, "#queues") if (r["broker"], r["queue"]) == ("broker-b", "1")
        )
        assert (row["committed"], row["lag"], row["inflight"]) == ("unknown", "unknown", "?")
        assert row["last"] == "-"
        assert "lag 120 (+1 unknown)" in text_of(app, "#summary")


async def test_retry_and_dlq_queues_sit_beside_the_topics() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_billing(pilot)
        rows = shown(app, "#queues")
        assert [r["topic"] for r in rows] == ["orders"] * 4 + ["%RETRY%", "%DLQ%"]
        retry, dlq = rows[-2], rows[-1]
        assert (retry["committed"], retry["lag"]) == ("11", "3")
        assert (dlq["max"], dlq["committed"], dlq["lag"]) == ("2", "-", "-")
        assert "retry 3 · DLQ 2" in text_of(app, "#summary")


async def test_clients_with_versions() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_billing(pilot)
        assert [(r["client"], r["version"]) for r in shown(app, "#clients")] == [
            ("10.0.0.5@4242#1", "V5_3_3"),
            ("10.0.0.6@4343#2", "V5_3_2"),
        ]
        assert "clu push · 2 online" in text_of(app, "#summary")


async def test_sparkline_and_stall_build_up_over_refreshes() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_billing(pilot)
        assert text_of(app, "#summary").splitlines()[1].startswith("OK")
        for max_offset in (1300, 1400):
            fake.advance()
            fake.commit("billing", "orders", "broker-a", 0, max_offset=max_offset)
            await pilot.press("r")
            await settle(pilot)
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        assert list(screen.query_one(Sparkline).data or []) == [120.0, 220.0, 320.0]
        second = text_of(app, "#summary").splitlines()[1]
        assert second.startswith("STALL orders@broker-a:0 committed 1100 unchanged for 10s")
        assert "120..320 over 3 refreshes" in text_of(app, "#spark-range")


async def test_offline_group_reads_offline_and_stop() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        await pilot.press("enter")  # audit, the worst
        await settle(pilot)
        summary = text_of(app, "#summary")
        assert "OFFLINE" in summary
        assert summary.splitlines()[1].startswith("STOP orders@broker-a:0 lag 1000")
        assert "behind 2h00m" in summary


async def test_a_broadcasting_group_shows_its_clients_own_offsets_never_a_zero() -> None:
    app, fake = fake_app()
    billing = fake.groups["billing"]
    store = ClientStore(
        client_id="10.0.0.5@DEFAULT",
        group="billing",
        path="/home/app/.rocketmq_offsets/10.0.0.5@DEFAULT/billing/offsets.json",
        modified_ms=0,
        running=True,
        queues=(
            q("orders", "broker-a", 0, 1200, 1150)._replace(client_id="10.0.0.5@DEFAULT"),
            q("orders", "broker-b", 0, 990, 990)._replace(client_id="10.0.0.5@DEFAULT"),
        ),
    )
    fake.groups["billing"] = replace(
        billing, queues=(), message_model="BROADCASTING", client_stores=(store,)
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await open_billing(pilot)
        rows = [r for r in shown(app, "#queues") if r["topic"] == "orders"]
        assert [(r["broker"], r["committed"], r["lag"], r["client"]) for r in rows] == [
            ("broker-a", "1150", "50", "10.0.0.5@DEFAULT"),
            ("broker-b", "990", "0", "10.0.0.5@DEFAULT"),
        ]
        summary = text_of(app, "#summary")
        assert "lag 50 (1 client file(s) here)" in summary
        assert "lag 0" not in summary
        # No file here: the lag is the clients', unknown, and said so.
        fake.groups["billing"] = replace(fake.groups["billing"], client_stores=())
        await pilot.press("r")
        await settle(pilot)
        assert "lag client-local (no offsets.json here)" in text_of(app, "#summary")
        assert [r for r in shown(app, "#queues") if r["topic"] == "orders"] == []


async def test_the_interval_firing_before_the_screens_widgets_are_mounted_reads_nothing() -> None:
    # On a loaded machine the refresh interval fired on a group screen that had been shown
    # but whose status line was not mounted (yet): the tick raised NoMatches in the console.
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_billing(pilot)
        shown_screen = app.screen
        assert isinstance(shown_screen, GroupScreen)
        unmounted = GroupScreen(shown_screen.cluster_session, "billing")
        unmounted._shown = True
        unmounted.refresh_due()
        assert not unmounted.refreshing

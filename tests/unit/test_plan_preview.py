"""The reset preview screen on a fake cluster and a fake planner: the form builds the spec, the
job's progress shows, the diff reads with totals, warnings and the reset path; bad input and a
cancelled job are reported; nothing is written. The form is checked as the terminal shows it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from console.domain.gaps import Gap, Part, Why
from console.domain.spec import ByDuration, StrategyKind, ToTimestamp
from console.services.infra.spark_jobs import JobInputError
from console.services.plan.preview_flow import Stage
from console.ui.app import ConsoleApp
from console.ui.screens.preview import PreviewScreen
from tests.support.previews import FakePlanner, FakePlanners, T, open_preview
from tests.ui.fakes import fake_app, fake_services
from tests.ui.helpers import screen_lines, settle, shown, text_of


@pytest.fixture(autouse=True)
def _no_developer_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(tmp_path / "config.yaml"))


@pytest.fixture
def planner() -> FakePlanner:
    return FakePlanner()


def app_planning(planner: FakePlanner, **kw: Any) -> tuple[ConsoleApp, FakePlanners]:
    """The console whose previews plan on `planner`."""
    planners = FakePlanners(planner)
    app, _ = fake_app(services=fake_services(planners=planners), **kw)
    return app, planners


async def test_preview_shows_the_diff(planner: FakePlanner) -> None:
    app, planners = app_planning(planner)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_preview(pilot)
        assert isinstance(app.screen, PreviewScreen)
        assert planners.warmed >= 1  # Spark is asked to warm up as the screen opens
        await pilot.click("#value")
        await pilot.press(*"2026-11-22T10:05:00+01:00", "enter")
        await settle(pilot)
        assert planner.specs[0].strategy == ToTimestamp(T)
        assert planner.specs[0].scope.groups == ("billing",)
        assert [r["target"] for r in shown(app, "#diff")] == ["1000", "0*", "500"]
        summary = text_of(app, "#plan-summary")
        assert "reset path: client push" in summary
        assert "3/3 queues change" in summary
        assert "catch-up" in summary
        assert "re-consume 1280" in summary


async def test_a_plan_from_a_partial_snapshot_says_what_it_lacks(planner: FakePlanner) -> None:
    # `rmq-console plan` warns and exits 1 for it: the preview says it too, never a clean diff.
    planner.missing = (
        Gap(Part.CLIENTS, "billing via proxies", Why.NOT_REPORTED, "none was asked"),
    )
    app, _ = app_planning(planner)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_preview(pilot)
        await pilot.click("#value")
        await pilot.press(*"2026-11-22T10:05:00+01:00", "enter")
        await settle(pilot)
        summary = text_of(app, "#plan-summary")
        assert "PARTIAL snapshot: the plan lacks clients billing via proxies: none was asked" in (
            " ".join(summary.split())
        )


async def test_warnings_only_and_the_mqadmin_equivalent(planner: FakePlanner) -> None:
    app, _ = app_planning(planner)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_preview(pilot)
        await pilot.click("#value")
        await pilot.press(*"2026-11-22T09:05:00Z", "enter")
        await settle(pilot)
        await pilot.press("w")
        assert [r["warnings"] for r in shown(app, "#diff")] == ["below_min", "no_committed"]
        await pilot.press("w")
        assert len(shown(app, "#diff")) == 3
        assert [r["move"] for r in shown(app, "#diff")] == ["+100", "+1180", "?"]
        await pilot.press("m")
        await pilot.pause()
        lines = app.screen.lines  # type: ignore[attr-defined]
        assert lines[0].startswith("# these commands WRITE offsets")
        assert lines[1] == (
            f"mqadmin resetOffsetByTime -n 10.0.0.9:9876 -g billing -t orders -s {T} -f true"
        )


async def test_bad_input_is_named_and_nothing_runs(planner: FakePlanner) -> None:
    app, _ = app_planning(planner)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_preview(pilot)
        await pilot.click("#value")
        await pilot.press(*"2026-11-22T10:05", "enter")
        await settle(pilot)
        assert planner.specs == []
        assert text_of(app, "#plan-summary").startswith(
            "cannot plan: strategy.to-timestamp: '2026-11-22T10:05' has no time zone"
        )
        planner.fail = JobInputError("o.csv:3: queue orders / broker-a / 9 does not exist")
        app.screen.query_one("#value", Input).value = "2026-11-22T10:05Z"
        await pilot.click("#run")
        await settle(pilot)
        assert len(planner.specs) == 1
        assert "o.csv:3: queue orders" in text_of(app, "#plan-summary")
        assert shown(app, "#diff") == []


async def test_progress_then_cancel(planner: FakePlanner) -> None:
    planner.release.clear()
    app, _ = app_planning(planner)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_preview(pilot)
        await pilot.click("#value")
        await pilot.press(*"30m")
        await pilot.click("#strategy")
        await pilot.pause()
        screen: Any = app.screen
        screen.query_one("#strategy").value = StrategyKind.BY_DURATION
        await pilot.click("#run")
        assert await asyncio.to_thread(planner.reported.wait, 30)
        await pilot.pause()
        assert str(screen.query_one("#step").render()) == "computing the plan · 3/8 tasks"
        assert screen.query_one("#progress").progress == 3
        assert screen.check_action("cancel_plan", ()) is True
        await pilot.press("x")
        await settle(pilot)
        assert planner.cancelled.is_set()
        assert str(screen.query_one("#step").render()) == "cancelled"
        assert screen.flow.stage is Stage.CANCELLED
        assert screen.check_action("preview", ()) is True
        assert planner.specs[0].strategy == ByDuration(1_800_000)


async def test_the_form_shows_what_is_typed_at_80x24(planner: FakePlanner) -> None:
    """Each control, focused, shows its content on its one line: no box draws a border over
    what is typed into it (a tall border in a one-line row leaves only its top edge)."""
    app, _ = app_planning(planner)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_preview(pilot)
        # The hint, whole: what a time looks like, zone included.
        assert "to-timestamp" in screen_lines(app)[2]
        assert "time with zone, e.g. 2026-11-22T10:05+01:00" in screen_lines(app)[2]
        await pilot.press("shift+tab", "enter")  # the strategy list, opened with the keyboard
        await pilot.pause()
        below = "\n".join(screen_lines(app)[3:])  # the list opens under the strategy's line
        assert all(kind in below for kind in StrategyKind), below
        await pilot.press("down", "enter")  # to-timestamp -> by-duration
        await pilot.press("tab", *"10m")
        await pilot.pause()
        assert app.focused is not None
        assert app.focused.id == "value"
        form = screen_lines(app)[2:4]
        assert "by-duration" in form[0]
        assert "10m" in form[0], "\n".join(form)
        assert "Preview" in form[0]
        for box, typed in (("topics", "orders"), ("brokers", "broker-a"), ("queues", "0,1")):
            await pilot.press("tab") if box != "topics" else await pilot.press("tab", "tab")
            await pilot.press(*typed)
            await pilot.pause()
            assert app.focused is not None
            assert app.focused.id == box
            form = screen_lines(app)[2:4]
            assert typed in form[1], f"{box}:\n" + "\n".join(form)
        await pilot.press("tab", "space")  # retry on, focused
        await pilot.pause()
        assert app.focused is not None
        assert app.focused.id == "retry"
        form = screen_lines(app)[2:4]
        assert "retry" in form[1]
        assert "clamp" in form[1]
        assert all(edge not in line for line in form for edge in "▔▁▊▎"), "\n".join(form)
        await pilot.press("r")  # off the text boxes, r is Preview
        await settle(pilot)
        spec = planner.specs[0]
        assert spec.strategy == ByDuration(600_000)
        assert spec.scope.topics == ("orders",)
        assert spec.scope.brokers == ("broker-a",)
        assert spec.scope.queue_ids == (0, 1)
        assert spec.scope.include_retry is True
        assert "orders  broker-a  0" in "\n".join(screen_lines(app))

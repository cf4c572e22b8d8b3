"""Where a write must be copied to the replicas (controller mode), the console says what became
of it: the apply's result names the replica that has not copied it yet and how to check again;
History shows each apply's replica lines above the table, `v` reads the apply's queues again
(`verify`) and names the queues a switch rolled back, and `R` then writes them again. Against a
real controller-mode cluster: tests/integration/test_failover.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from console.config import ClusterConfig, Config
from console.domain.journal import ApplyStatus, Journal, QueueState
from console.services.apply.resume_check import ResumeCheck
from console.services.apply.verify_journal import QueueNow, Verification
from console.services.apply.write_check import WriteCheck
from console.services.infra.journal_store import JournalStore
from console.ui.screens.apply import ApplyResultDialog, ConfirmApplyDialog
from console.ui.screens.dialogs import CommandsDialog, ErrorDialog
from console.ui.screens.history import HistoryScreen
from console.ui.screens.verify_result import VerifyDialog

from .fakes import PROD, STAGING, fake_app, fake_services
from .helpers import settle, text_of, until
from .test_history import history_writes, journal

APPLY_ID = "20261124T000000000Z-apply-billing-aaaaaa"
OLD, NEW = "127.0.0.1:10911", "127.0.0.1:10921"
NOT_COPIED = (
    f"broker-a: written on the master {OLD}; replica {NEW} (id 2) has not copied 4 queue(s) "
    f"yet: a switch now would roll them back (`rmq-console verify {APPLY_ID}` checks again)"
)


def not_copied() -> Journal:
    """Every queue read back on the master, not copied by the other replica in time."""
    j = journal(APPLY_ID, at=0, status=ApplyStatus.NOT_COPIED, verified=4, cluster="staging")
    queues = tuple(replace(q, stored=q.target) for q in j.queues)
    return replace(j, queues=queues, replicas=(NOT_COPIED,))


def rolled_back(j: Journal) -> Verification:
    """What `verify` reads after the switch: the replica elected holds queue 0 at its
    before-image; the others hold the write."""
    queues = tuple(QueueNow(q, NEW, q.before if q.queue_id == 0 else q.target) for q in j.queues)
    return Verification(
        j, queues, ("broker-a: master 127.0.0.1:10921; no other replica",), 0, (), 0
    )


async def test_the_apply_result_names_the_replica_that_has_not_copied_the_write() -> None:
    app, _ = fake_app(open_cluster=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        app.push_screen(ApplyResultDialog(not_copied(), "/ws/journals/j.json"))
        await pilot.pause()
        assert text_of(app, "#apply-replicas") == NOT_COPIED
        assert (
            f"{APPLY_ID}: written on the master, not copied to every replica · 4 verified"
            in text_of(app, "#apply-result")
        )
        hint = text_of(app, "#apply-hint")
        assert f"History (H) verifies it again (v), or rmq-console verify {APPLY_ID}" in hint


async def test_history_shows_the_replicas_and_verify_finds_the_rollback_resume_writes(
    tmp_path: Path,
) -> None:
    store = JournalStore(tmp_path / "ws")
    applied = not_copied()
    store.write(applied)
    writes = history_writes(store)
    resumed: list[ResumeCheck] = []

    def check(kind: str, apply_id: str) -> WriteCheck:
        found = ResumeCheck(store.load(apply_id), (), (), (), (), (), (), applied.queues[:1])
        resumed.append(found)
        return found

    writes.check = check
    asked: list[tuple[str, str]] = []

    async def verify(cluster: ClusterConfig, config: Config, apply_id: str) -> Verification:
        asked.append((cluster.name, apply_id))
        return rolled_back(store.load(apply_id))

    config = Config(
        clusters=(PROD, STAGING),
        refresh_interval=3600,
        theme="rmq-dark",
        workspace=str(tmp_path / "ws"),
    )
    services = replace(fake_services(writes=writes), verify=verify)
    app, _ = fake_app(open_cluster=None, config=config, services=services)
    async with app.run_test(size=(140, 30), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        history = app.screen
        assert isinstance(history, HistoryScreen)
        # The apply's replica line above the table; `m` adds the command that checks again.
        assert text_of(app, "#history-step") == NOT_COPIED
        await pilot.press("m")
        await settle(pilot)
        commands = app.screen
        assert isinstance(commands, CommandsDialog)
        assert f"rmq-console verify {APPLY_ID} --cluster staging" in commands.lines
        await pilot.press("escape")
        await settle(pilot)
        # Every queue verified by the apply: nothing to resume until a rollback is found.
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, ErrorDialog)
        assert "nothing to resume" in text_of(app, "#error-message")
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, VerifyDialog))
        assert asked == [("staging", APPLY_ID)]
        assert text_of(app, "#verify-title") == (
            f"verify {APPLY_ID}: 3/4 hold on the master now · 1 rolled back by a switch or moved"
        )
        lines = text_of(app, "#verify-lines").splitlines()
        assert lines[0] == (
            f"billing orders/broker-a/0: ROLLED BACK: the master {NEW} (the apply wrote on "
            f"{OLD}) holds 100, the offset before the apply, not 90"
        )
        assert lines[-1] == "broker-a: master 127.0.0.1:10921; no other replica"
        assert f"R resumes {APPLY_ID}" in text_of(app, "#verify-hint")
        await pilot.press("escape")
        await settle(pilot)

        # Now `R` reads the cluster and asks to write the rolled-back queue again.
        await pilot.press("R")
        await until(pilot, lambda: isinstance(app.screen, ConfirmApplyDialog))
        dialog = app.screen
        assert isinstance(dialog, ConfirmApplyDialog)
        assert dialog.summary.title == f"Resume {APPLY_ID} on staging?"
        assert "1 queue(s) the apply verified were rolled back by a switch" in text_of(
            app, "#apply-lines"
        )
        assert [r.rolled_back for r in resumed][-1] == applied.queues[:1]
        assert [q.state for q in applied.queues] == [QueueState.VERIFIED] * 4

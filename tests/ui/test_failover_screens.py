"""The console's screens in controller mode: the overview shows each replica's epoch and place
in the SyncStateSet, the controller, each set's master and epoch, a replica outside the
SyncStateSet and one the controller knows that the name server does not list. (Against a real
controller: tests/integration/test_failover.py.)"""

from __future__ import annotations

from console.services.read.routes import BrokerHealth, ReplicaFacts
from tests.ui.fakes import fake_app
from tests.ui.helpers import screen_lines, settle, shown, text_of

CONTROLLER = "10.0.0.9:9878"


def facts(controller_id: int, *, in_sync: bool, alive: bool = True) -> ReplicaFacts:
    return ReplicaFacts(
        CONTROLLER,
        controller_id=controller_id,
        alive=alive,
        in_sync=in_sync,
        master_epoch=3,
        sync_state_set_epoch=5,
        epoch=3 if in_sync else 2,
    )


async def test_the_overview_shows_epochs_the_sync_state_set_and_the_controller() -> None:
    app, fake = fake_app()
    fake.brokers = [
        BrokerHealth("broker-a", "10.0.0.2:10911", True, "V5_3_3", replica=facts(2, in_sync=True)),
        BrokerHealth(
            "broker-a",
            "10.0.0.1:10911",
            True,
            "V5_3_3",
            broker_id=1,
            replica=facts(1, in_sync=False),
        ),
        BrokerHealth(
            "broker-a",
            "10.0.0.3:10911",
            False,
            error="known to the controller, not registered with the name server",
            broker_id=-1,
            replica=facts(3, in_sync=False, alive=False),
        ),
        BrokerHealth("broker-b", "10.0.0.4:10911", True, "V5_3_3"),
    ]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        rows = {(r["broker"], r["addr"]): r for r in shown(app)}
        master = rows[("broker-a", "10.0.0.2:10911")]
        assert (master["role"], master["note"]) == ("MASTER", "epoch 3, in sync")
        behind = rows[("broker-a", "10.0.0.1:10911")]
        assert (behind["role"], behind["note"]) == ("SLAVE 1", "epoch 2, NOT in sync")
        gone = rows[("broker-a", "10.0.0.3:10911")]
        assert (gone["role"], gone["state"]) == ("-", "DOWN")
        notes = " ".join(text_of(app, "#notes").split())
        assert f"controller mode: controller {CONTROLLER}" in notes
        assert (
            "broker-a: master 10.0.0.2:10911, epoch 3; in the SyncStateSet: 10.0.0.2:10911 (id 2)"
        ) in notes
        assert (
            "broker-a slave 1 at 10.0.0.1:10911: outside the SyncStateSet (behind its master): "
            "it cannot be elected while it is"
        ) in notes
        assert "broker-a replica 10.0.0.3:10911: known to the controller" in notes
        assert all(len(line) <= 80 for line in screen_lines(app))

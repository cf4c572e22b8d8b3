"""History: what the workspace remembers, newest first — snapshots, plans, applies and undos
(with how they ended), and the audit log. Read from files in a worker.

On an apply or an undo, `u` undoes it and `R` resumes it (when it stopped part-way), each as the
apply session `rmq-console undo | resume` run (console/services/apply/session.py), on a worker:
the session plans the undo, or reads again what is left, against the cluster; the confirm
dialog shows it and opens only to the typed group name (focus starts on Cancel); the session
reads the cluster again, writes through the journal and reads every queue back; the result lists
each queue; `x` while it writes sends no more writes (what was sent is read back and recorded:
`R` finishes it). On an apply of a read-only cluster `u` and `R` are not offered (the line above
the table says why), as the preview offers no apply there; the session refuses one all the same
before anything is read. `m` on a row shows the same as commands (none on a read-only cluster).

On an apply, the line above the table says what became of its write on each broker's replicas
(copied, or which replica has not copied it yet), and `v` reads its queues again now
(`rmq-console verify`): a queue a switch rolled back is named, and `R` then writes it again.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Label, Static

from console.errors import Refused
from console.rocketmq.errors import RocketMQError
from console.services.apply.events import (
    Applied,
    Confirmed,
    Declined,
    UndoPlanProgressed,
    WriteProgressed,
    WriteRefused,
)
from console.services.apply.history import read_history
from console.services.infra.workspace import Workspace
from console.services.plan.preview_flow import StopSwitch
from console.ui.messages import (
    ApplyVerified,
    ConfirmationAsked,
    HistoryRead,
    SessionTold,
    SnapshotGroupsRead,
)
from console.ui.screens.apply import ApplyResultDialog, ConfirmApplyDialog, write_summary
from console.ui.screens.base import ConsoleScreen
from console.ui.screens.dialogs import ErrorDialog
from console.ui.screens.verify_result import VerifyDialog
from console.ui.widgets.dataview import DataView
from console.ui.widgets.rowtable import RowTable
from console.ui.widgets.tablemodel import Column, Row, cell
from console.ui.writing import DialogConfirm, answer, posted

if TYPE_CHECKING:
    from console.config import ClusterConfig
    from console.services.apply.history import HistoryEntry, WorkspaceHistory

WRITE_GROUP = "history-write"
Action = Literal["undo", "resume"]
_APPLIES = ("apply", "undo")

COLUMNS = (
    Column("when", "WHEN", "when (UTC)"),
    Column("what", "WHAT", "snapshot, plan, apply, undo, or an unreadable journal"),
    Column("status", "STATUS", "what it holds or how it ended"),
    Column("groups", "GROUPS", "groups"),
    Column("cluster", "CLUSTER", "cluster"),
    Column("ref", "ID", "id"),
)


def history_rows(entries: tuple[HistoryEntry, ...]) -> list[Row]:
    return [
        Row(
            f"{e.what}|{e.ref}",
            (
                cell(e.at_ms, _when(e.at_ms)),
                cell(e.what),
                cell(e.status),
                cell(", ".join(e.groups)),
                cell(e.cluster),
                cell(e.ref),
            ),
        )
        for e in entries
    ]


def _when(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%m-%d %H:%M:%S")


def summary_line(history: WorkspaceHistory) -> str:
    counts: dict[str, int] = {}
    for e in history.entries:
        counts[e.what] = counts.get(e.what, 0) + 1
    plural = {"snapshot": "snapshots", "plan": "plans", "apply": "applies", "undo": "undos"}
    parts = [f"{counts.get(w, 0)} {many}" for w, many in plural.items()]
    parts.append(f"{history.audit_lines} audit lines")
    line = " · ".join(parts)
    if history.problems:
        line += f" · {len(history.problems)} unreadable: {history.problems[0]}"
    return line


class HistoryScreen(ConsoleScreen):
    crumb = "history"
    BINDINGS = [
        Binding("r", "reload", "Reload", id="history_reload"),
        Binding("u", "undo", "Undo", id="history_undo"),
        Binding("R", "resume", "Resume", id="history_resume"),
        Binding("v", "verify", "Verify", id="history_verify"),
        Binding("w", "put_back", "Put back", id="history_put_back"),
        Binding("x", "stop", "Stop", id="history_stop"),
    ]

    def __init__(self) -> None:
        super().__init__(None)
        self.history: WorkspaceHistory | None = None
        #: An undo's or resume's confirmation, asked in the dialog.
        self.confirm = DialogConfirm(self.post_message)
        #: From the check of an undo or a resume until its result (or refusal) is shown.
        self.writing: Action | None = None
        self.target: ClusterConfig | None = None
        #: While an undo or a resume writes: asks it (on its worker's loop) to send no more.
        self.stop_switch: StopSwitch | None = None
        #: Applies `v` found queues of that no longer hold what they wrote: `R` writes them again.
        self.rolled_back: set[str] = set()

    def compose_body(self) -> ComposeResult:
        yield Static(Text("reading the workspace…"), id="history-summary")
        yield Label("", id="history-step")
        yield DataView("history", COLUMNS, id="history")

    def on_mount(self) -> None:
        self.query_one(DataView).focus_table()
        self.action_reload()

    def action_reload(self) -> None:
        self.status.update_state(busy=True)
        self.load()

    @work(thread=True, exclusive=True, group="history", exit_on_error=False)
    def load(self) -> None:
        history = read_history(Workspace(self.console.config.workspace_path))
        self.post_message(HistoryRead(history))

    def on_history_read(self, message: HistoryRead) -> None:
        self.history = message.history
        self.query_one(DataView).set_rows(history_rows(message.history.entries))
        self.query_one("#history-summary", Static).update(Text(summary_line(message.history)))
        self.status.update_state(busy=self.writing is not None)
        self._offer()

    def on_row_table_cursor_moved(self, message: RowTable.CursorMoved) -> None:
        self._offer()  # `u` and `R` follow the cluster of the row under the cursor

    @property
    def current(self) -> HistoryEntry | None:
        key = self.query_one(DataView).current_key
        if self.history is None or key is None:
            return None
        return next((e for e in self.history.entries if f"{e.what}|{e.ref}" == key), None)

    def mqadmin_lines(self) -> list[str]:
        if self.history is None or self.query_one(DataView).current_key is None:
            return ["# choose a plan or an apply first"]
        e = self.current
        if e is None:
            return []
        if e.commands and self._read_only(e):
            return [f"# {e.what} {e.ref}", f"# {self._read_only_line(e)}"]
        return [f"# {e.what} {e.ref}", *e.commands] if e.commands else [f"# {e.what} {e.ref}"]

    # ---- undo and resume -------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("undo", "resume"):
            # Offered while an apply of a cluster that may be written is listed, unless the
            # row under the cursor is one of a read-only cluster (the session would refuse it).
            writable = self.history is not None and any(
                e.what in _APPLIES and not self._read_only(e) for e in self.history.entries
            )
            current = self.current if self.history is not None else None
            here = current is None or not self._read_only(current)
            return True if writable and here and self.writing is None else None
        if action == "stop":
            switch = self.stop_switch
            return True if switch is not None and not switch.requested else None
        return True

    def action_stop(self) -> None:
        """No more writes: what was sent is still read back and recorded, and the result says
        where the undo or resume stopped (`R` finishes it)."""
        switch = self.stop_switch
        if switch is None or switch.requested:
            return
        switch.request()
        self._step(f"stopping the {self.writing}: no new writes, reading back")

    def action_put_back(self) -> None:
        """On a snapshot: the put-back walkthrough for its group, the snapshot chosen."""
        e = self.current
        if e is None or e.what != "snapshot":
            self.notify(
                "choose a snapshot to put a group back to it (u undoes an apply)",
                severity="warning",
                markup=False,
            )
            return
        cluster = next((c for c in self.console.config.clusters if c.name == e.cluster), None)
        if cluster is None:
            self.app.push_screen(
                ErrorDialog("Put back", f"cluster {e.cluster!r} is not in the config")
            )
            return
        self.read_snapshot_groups(e.ref, cluster)

    @work(thread=True, exclusive=True, group="history-snapshot", exit_on_error=False)
    def read_snapshot_groups(self, snapshot_id: str, cluster: ClusterConfig) -> None:
        # deferred: pyarrow (snapshots are Parquet files)
        from console.services.read.snapshots import SnapshotStore

        store = SnapshotStore(Workspace(self.console.config.workspace_path))
        groups = sorted(store.groups_in(store.find(cluster.name, snapshot_id)))
        self.post_message(SnapshotGroupsRead(cluster, snapshot_id, tuple(groups)))

    def on_snapshot_groups_read(self, message: SnapshotGroupsRead) -> None:
        # deferred: a screen loads when first opened, not with the console's first frame
        from console.ui.screens.walkthrough import WalkthroughScreen

        groups = message.groups
        # The group the operator came from, when the snapshot holds it.
        beneath = [
            g for s in self.app.screen_stack if isinstance(g := getattr(s, "group", None), str)
        ]
        chosen = next((g for g in reversed(beneath) if g in groups), None)
        if chosen is None and len(groups) == 1:
            chosen = groups[0]
        if chosen is None:
            self.notify(
                f"snapshot {message.snapshot_id} holds {len(groups)} groups "
                f"({', '.join(groups[:6])}{'…' if len(groups) > 6 else ''}): open the group, "
                f"w, put-back, and give {message.snapshot_id}",
                severity="warning",
                timeout=15,
                markup=False,
            )
            return
        session = self.console.session_for(message.cluster)
        self.app.push_screen(
            WalkthroughScreen(session, chosen, "put-back", prefill={"back_to": message.snapshot_id})
        )

    def _read_only(self, e: HistoryEntry) -> bool:
        """An apply or undo of a cluster the config marks `read_only`: never written from here."""
        if e.what not in _APPLIES:
            return False
        cluster = next((c for c in self.console.config.clusters if c.name == e.cluster), None)
        return cluster is not None and cluster.read_only

    @staticmethod
    def _read_only_line(e: HistoryEntry) -> str:
        return (
            f"cluster {e.cluster!r} is read-only (read_only: true in the config): "
            f"no undo or resume of {e.what} {e.ref}"
        )

    def _offer(self) -> None:
        """The keys for the row under the cursor, and why there are none on a read-only
        cluster's apply (unless an undo or a resume is under way: its step is shown)."""
        if self.writing is not None:
            self.refresh_bindings()
            return
        e = self.current
        if e is not None and self._read_only(e):
            self._step(self._read_only_line(e))
        else:
            self._step("\n".join(e.replicas) if e is not None else "")

    def action_undo(self) -> None:
        self._begin("undo")

    def action_resume(self) -> None:
        self._begin("resume")

    def _begin(self, what: Action) -> None:
        e = self.current
        if self.writing is not None:
            return
        if e is None or e.what not in _APPLIES:
            self.notify(f"choose an apply or an undo to {what}", severity="warning", markup=False)
            return
        cluster = next((c for c in self.console.config.clusters if c.name == e.cluster), None)
        if cluster is None:
            self._refused(what, [f"cluster {e.cluster!r} is not in the config"])
            return
        if what == "resume" and not (e.resumable or e.ref in self.rolled_back):
            self._refused(what, [f"{e.what} {e.ref}: every queue is verified; nothing to resume"])
            return
        self.writing, self.target = what, cluster
        self.stop_switch = StopSwitch()
        self._step(f"planning the undo of {e.ref}…" if what == "undo" else "reading the cluster…")
        self.write(what, e.ref, cluster)

    def action_verify(self) -> None:
        """Read the apply's queues again now, on the masters and the replicas."""
        e = self.current
        if e is None or e.what not in _APPLIES:
            self.notify("choose an apply or an undo to verify", severity="warning", markup=False)
            return
        cluster = next((c for c in self.console.config.clusters if c.name == e.cluster), None)
        if cluster is None:
            self.app.push_screen(
                ErrorDialog("Verify refused", f"cluster {e.cluster!r} is not in the config")
            )
            return
        if self.writing is None:
            self._step(f"verifying {e.ref}: reading its queues on the masters and replicas now…")
        self.verify(e.ref, cluster)

    @work(thread=True, exclusive=True, group="history-verify", exit_on_error=False)
    def verify(self, apply_id: str, cluster: ClusterConfig) -> None:
        ask = self.console.services.verify
        try:
            found = asyncio.run(ask(cluster, self.console.config, apply_id))
        except Refused as exc:
            self.post_message(ApplyVerified(apply_id, None, exc.reasons))
            return
        except RocketMQError as exc:
            self.post_message(ApplyVerified(apply_id, None, (f"{cluster.name}: {exc}",)))
            return
        self.post_message(ApplyVerified(apply_id, found))

    def on_apply_verified(self, message: ApplyVerified) -> None:
        self._offer()
        found = message.found
        if found is None:
            text = "\n".join(message.refused)
            self.app.push_screen(ErrorDialog("Verify refused", f"{text}\nnothing was read"))
            return
        # Only a queue back at its before-image is written again by a resume.
        if any(n.stored == n.queue.before for n in found.rolled_back):
            self.rolled_back.add(message.apply_id)
        else:
            self.rolled_back.discard(message.apply_id)
        self.app.push_screen(VerifyDialog(found))

    @work(thread=True, exclusive=True, group=WRITE_GROUP, exit_on_error=False)
    def write(self, what: Action, apply_id: str, cluster: ClusterConfig) -> None:
        """The undo or resume as one apply session (console/services/apply/session.py): this
        screen renders its events and answers its confirmation with the dialog."""
        asyncio.run(self._write(what, apply_id, cluster))

    async def _write(self, what: Action, apply_id: str, cluster: ClusterConfig) -> None:
        writes = self.console.services.writes
        intent = writes.undo(apply_id) if what == "undo" else writes.resume(apply_id)
        stop = self.stop_switch.event() if self.stop_switch is not None else asyncio.Event()
        tell = posted(self.post_message)
        result = await writes.run(cluster, intent, self.confirm, tell, stop)
        if result.journal is not None and not result.written:
            # Read again, nothing was left to write (a rollback `v` found was written since).
            tell(WriteRefused((f"{apply_id}: every queue holds what it wrote; nothing to write",)))

    def on_session_told(self, message: SessionTold) -> None:
        match message.event:
            case UndoPlanProgressed(p) if self.writing == "undo":
                tasks = f" · {p.done}/{p.total} tasks" if p.total else ""
                self._step(f"planning the undo: {p.step or p.state.value}{tasks}")
            case Confirmed():
                self._step("reading the cluster again before writing…")
            case Declined():
                what = self.writing
                self._ended()
                self.notify(f"{what} cancelled: nothing was written", markup=False)
            case WriteProgressed(p) if self.writing is not None:
                stopping = self.stop_switch is not None and self.stop_switch.requested
                stage = "stopping: no new writes, reading back" if stopping else p.stage
                waiting = f" · {p.waiting}" if p.waiting else ""
                self._step(
                    f"{self.writing}: {stage}: {p.settled}/{p.total} answered · "
                    f"{p.verified} verified" + waiting
                )
            case WriteRefused(reasons):
                self._refused(self.writing or "write", reasons)
            case Applied(journal, journal_path):
                self._ended()
                self.app.push_screen(ApplyResultDialog(journal, journal_path))
                self.action_reload()  # the undo's journal, or the resumed apply's new status

    def on_confirmation_asked(self, message: ConfirmationAsked) -> None:
        assert self.target is not None
        self._step("waiting for the confirmation…")
        summary = write_summary(message.check, self.target)
        self.app.push_screen(
            ConfirmApplyDialog(summary), lambda confirmation: answer(message.reply, confirmation)
        )

    def on_unmount(self) -> None:
        self.confirm.abandon()  # a session waiting for its confirmation: nothing is written

    def worker_failed(self, group: str, error: BaseException) -> None:
        if group == WRITE_GROUP:
            self._ended()
        super().worker_failed(group, error)

    def _refused(self, what: str, reasons: tuple[str, ...] | list[str]) -> None:
        self._ended()
        text = "\n".join(reasons)
        self.app.push_screen(
            ErrorDialog(f"{what.capitalize()} refused", f"{text}\nnothing was written")
        )

    def _ended(self) -> None:
        self.writing = None
        self.stop_switch = None
        self._offer()

    def _step(self, text: str) -> None:
        self.query_one("#history-step", Label).update(Text(text))
        self.status.update_state(busy=self.writing is not None)
        self.refresh_bindings()

"""What the workspace remembers, newest first: snapshots taken, plans made, applies and undos
with how they ended, and how many lines the audit log holds. Read from the files alone (no
cluster), for the console's History screen."""

from __future__ import annotations

from dataclasses import dataclass

from console.domain.journal import Journal, QueueState
from console.services.infra.journal_store import AuditLog, JournalStore, Unreadable, without_path
from console.services.infra.workspace import Workspace

#: Plans read per listing (each is a header file to open): the newest ones.
MAX_PLANS = 200


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    at_ms: int
    what: str  # snapshot, plan, apply, undo, or unreadable
    ref: str  # the id to quote: snapshot id, plan id, apply id
    cluster: str
    groups: tuple[str, ...]
    status: str  # one line: queues, strategy, how an apply ended
    #: What can be done with it from the command line (resume, undo), one command a line.
    commands: tuple[str, ...] = ()
    #: An apply or undo with queues not verified: resume would finish it.
    resumable: bool = False
    #: What became of an apply's write on each broker's replicas, one line per broker.
    replicas: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkspaceHistory:
    entries: tuple[HistoryEntry, ...]  # newest first
    audit_lines: int
    audit_path: str | None
    problems: tuple[str, ...]  # files that could not be read, one line each


def read_history(workspace: Workspace) -> WorkspaceHistory:
    entries: list[HistoryEntry] = []
    problems: list[str] = []
    for cluster in workspace.clusters():
        for ref in workspace.snapshots(cluster):
            entries.append(
                HistoryEntry(ref.taken_at_ms, "snapshot", ref.snapshot_id, cluster, (), "")
            )
    for plan_id in workspace.plans()[-MAX_PLANS:]:
        try:
            header = workspace.read_header(workspace.plan_uri(plan_id))
        except (OSError, ValueError) as exc:
            problems.append(f"plan {plan_id}: {exc}")
            continue
        groups = tuple(sorted({t.group for t in header.totals}))
        changed = sum(t.changed for t in header.totals if t.topic is None)
        strategy = header.spec.strategy.kind
        entries.append(
            HistoryEntry(
                header.created_at_ms,
                "plan",
                plan_id,
                header.snapshot.cluster,
                groups,
                f"{strategy}: {changed} of {header.rows} queues change",
                (f"rmq-console apply {plan_id} --cluster {header.snapshot.cluster}",),
            )
        )
    audit_lines, audit_path = 0, None
    root = workspace.local_root
    if root is not None:
        store = JournalStore(root)
        for j in store.all():
            if isinstance(j, Unreadable):
                problems.append(f"journal {j.apply_id}: {j.error}")
                entries.append(_unreadable_entry(j))
                continue
            entries.append(_apply_entry(store, j))
        log = AuditLog(root)
        if log.path.exists():
            audit_path = str(log.path)
            audit = log.scan()
            audit_lines = len(audit.lines)
            problems.extend(audit.problems)
    entries.sort(key=lambda e: (e.at_ms, e.ref), reverse=True)
    return WorkspaceHistory(tuple(entries), audit_lines, audit_path, tuple(problems))


def _unreadable_entry(j: Unreadable) -> HistoryEntry:
    """A journal that cannot be read keeps its row: it may be an apply left part-way."""
    try:
        at_ms = int(j.path.stat().st_mtime * 1000)
    except OSError:
        at_ms = 0
    return HistoryEntry(at_ms, "unreadable", j.apply_id, "?", (), without_path(j.error, j.path))


def _apply_entry(store: JournalStore, j: Journal) -> HistoryEntry:
    status = store.status(j)
    verified = j.count(QueueState.VERIFIED)
    line = f"{status}: {verified}/{len(j.queues)} verified"
    if j.undo_of:
        line += f" (undo of {j.undo_of})"
    target = f"--cluster {j.cluster}"
    commands = [f"rmq-console undo {j.apply_id} {target}"]
    if j.unfinished:
        commands.insert(0, f"rmq-console resume {j.apply_id} {target}")
    if j.replicas:
        # Where replicas were waited for, whether the write still holds is worth asking again.
        commands.append(f"rmq-console verify {j.apply_id} {target}")
    return HistoryEntry(
        j.started_at_ms,
        j.kind,
        j.apply_id,
        j.cluster,
        j.groups,
        line,
        tuple(commands),
        resumable=bool(j.unfinished),
        replicas=j.replicas,
    )

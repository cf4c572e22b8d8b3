"""A plan as an apply takes it: found by id or directory, its rows checked against the content
hash in its header, made for this cluster, and recent enough to still describe the cluster."""

from __future__ import annotations

from dataclasses import dataclass

from console.domain.plan import PLAN_COLUMNS, PLAN_MAX_AGE_MIN, PlanHeader, PlanRow
from console.domain.plan_hash import content_hash
from console.errors import BadFile, Refused
from console.services.infra import files
from console.services.infra.workspace import PLAN_JSON, ROWS, Workspace

DEFAULT_MAX_AGE_S = PLAN_MAX_AGE_MIN * 60


@dataclass(frozen=True, slots=True)
class LoadedPlan:
    uri: str
    header: PlanHeader
    rows: tuple[PlanRow, ...]

    @property
    def changed(self) -> tuple[PlanRow, ...]:
        """The rows an apply writes: a target that differs from the current offset."""
        return tuple(r for r in self.rows if r.changed)


def find_plan(workspace: Workspace, ref: str) -> str:
    """The URI of the plan `ref` names: a plan id of the workspace, or a plan directory."""
    candidates = []
    if "/" in ref or ref.startswith("."):
        candidates.append(files.to_uri(ref))
    else:
        try:
            candidates.append(workspace.plan_uri(ref))
        except ValueError:
            pass
    for uri in candidates:
        if files.exists(files.join(uri, PLAN_JSON)):
            return uri
    raise Refused([f"no plan {ref!r} (a plan id in {workspace.uri}/plans, or a directory)"])


def load_plan(
    workspace: Workspace,
    ref: str,
    *,
    cluster: str,
    now_ms: int,
    max_age_s: float = DEFAULT_MAX_AGE_S,
) -> LoadedPlan:
    """The plan `ref`, refused (Refused) when its rows do not match its hash, it was made for
    another cluster, or it is older than `max_age_s`."""
    try:
        uri = find_plan(workspace, ref)
        header = workspace.read_header(uri)
        rows_uri = files.join(uri, ROWS)
        table = files.read_parquet(rows_uri)
    except BadFile as exc:
        raise Refused([str(exc)]) from None
    missing = [name for name, _ in PLAN_COLUMNS if name not in table.column_names]
    if missing:
        raise Refused([f"{rows_uri}: the plan rows lack {', '.join(missing)}"])
    try:
        rows = tuple(PlanRow.from_dict(d) for d in table.to_pylist())
    except (TypeError, ValueError) as exc:
        raise Refused([f"{rows_uri}: not plan rows ({exc})"]) from None
    reasons = []
    made_for = header.snapshot.cluster
    if made_for != cluster:
        reasons.append(f"the plan was made for cluster {made_for!r}, not {cluster!r}")
    actual = content_hash(made_for, rows)
    if actual != header.content_hash or len(rows) != header.rows:
        reasons.append(
            "the plan's rows do not match its content hash (changed after it was made): re-plan"
        )
    too_old = age_refusal(header, now_ms=now_ms, max_age_s=max_age_s)
    if too_old is not None:
        reasons.append(too_old)
    if reasons:
        raise Refused(reasons)
    return LoadedPlan(uri, header, rows)


def age_refusal(header: PlanHeader, *, now_ms: int, max_age_s: float) -> str | None:
    """Why a plan is too old to apply at `now_ms` (None: it is not). Asked when the plan is
    loaded and again after the operator's confirmation, however long the prompt waited."""
    age_s = (now_ms - header.created_at_ms) / 1000
    if age_s <= max_age_s:
        return None
    return (
        f"the plan is {_minutes(age_s)} old (limit {_minutes(max_age_s)}): the cluster has "
        "moved on since; plan again"
    )


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def warning_counts(plan_uri: str) -> dict[str, int]:
    """How many queues of a plan carry each warning code, most frequent first."""
    warnings = files.read_parquet(files.join(plan_uri, ROWS), columns=["warnings"])["warnings"]
    counts: dict[str, int] = {}
    for codes in warnings.to_pylist():
        for code in codes or ():
            counts[code] = counts.get(code, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

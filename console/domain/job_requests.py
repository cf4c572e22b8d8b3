"""What the console asks a job to do: plain JSON-able values, the same for the warm session
host and for `spark-submit jobs/__main__.py plan request.json`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from console.domain.plan import SnapshotInfo
from console.domain.spec import FileOffset


@dataclass(frozen=True, slots=True)
class PlanRequest:
    plan_id: str
    spec: dict[str, Any]  # console.domain.spec.spec_to_dict
    snapshot_uri: str
    snapshot: SnapshotInfo
    out_uri: str  # the plan directory: plan.json and rows.parquet go in it
    created_at_ms: int
    timestamp_ms: int | None = None  # to-timestamp / by-duration, resolved by the caller
    namesrv: tuple[str, ...] = ()
    # The cluster's credentials *by reference* ({"access_key": "env:VAR", "secret_key":
    # "file:/path"}), resolved where the timestamp lookups run (the executors); never values.
    credentials: dict[str, str] | None = None
    # The cluster's TLS settings: file *paths* ({"ca": "/etc/rmq/ca.pem", ...}, verify,
    # server_name), read where the lookups connect; never a certificate or key itself.
    tls: dict[str, Any] | None = None
    # Where the lookups connect to a registered address: (registered, reached) pairs and a
    # SOCKS5 proxy's host:port (the cluster's address_map: and socks:).
    address_map: tuple[tuple[str, str], ...] = ()
    socks: str | None = None
    file_rows: tuple[FileOffset, ...] = ()  # from-file: the rows, already parsed and checked
    source_snapshot_uri: str | None = None  # to-snapshot
    source_snapshot: SnapshotInfo | None = None
    reset_paths: dict[str, dict[str, Any]] = field(default_factory=dict)
    imported_from: str | None = None
    search_timeout_s: float = 5.0
    # The caller already ran console.domain.checks.check_scope on this snapshot (the console
    # does, from the Arrow table it just wrote): the job skips that Spark action.
    prechecked: bool = False

    def __post_init__(self) -> None:
        if self.credentials is not None:
            check_credential_refs(self.credentials)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> PlanRequest:
        d = json.loads(text)
        d["snapshot"] = SnapshotInfo(**d["snapshot"])
        if d.get("source_snapshot"):
            d["source_snapshot"] = SnapshotInfo(**d["source_snapshot"])
        d["namesrv"] = tuple(d.get("namesrv") or ())
        d["address_map"] = tuple((str(a), str(b)) for a, b in d.get("address_map") or ())
        d["file_rows"] = tuple(FileOffset(**r) for r in d.get("file_rows") or ())
        return cls(**d)


CREDENTIAL_KEYS = frozenset({"access_key", "secret_key"})
REFERENCE_PREFIXES = ("env:", "file:")


def check_credential_refs(refs: dict[str, str]) -> None:
    """A request is written to disk and sent between processes: it may hold where the keys
    are, never the keys. Anything but `env:` / `file:` references is refused."""
    if set(refs) != CREDENTIAL_KEYS:
        raise ValueError(f"credentials: expected {sorted(CREDENTIAL_KEYS)}, got {sorted(refs)}")
    for key, ref in sorted(refs.items()):
        if not isinstance(ref, str) or not ref.startswith(REFERENCE_PREFIXES):
            # The value is not echoed: it may be the secret itself.
            raise ValueError(
                f"credentials.{key}: a job request carries references (env:VARIABLE or "
                "file:/path), never the value"
            )


@dataclass(frozen=True, slots=True)
class ImpactRequest:
    plan_uri: str  # the plan directory
    history_uris: tuple[str, ...]  # snapshot files, any order, the plan's own snapshot included
    out_uri: str | None = None  # where impact.json goes; None: only returned

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ImpactRequest:
        d = json.loads(text)
        d["history_uris"] = tuple(d["history_uris"])
        return cls(**d)

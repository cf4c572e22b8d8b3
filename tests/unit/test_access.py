"""The one factory: read-only refused before anything is opened, refusals named by their
access key, and plans that carry the cluster's credentials by reference only."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import pytest

from console.config import ClusterConfig, CredentialsRef
from console.domain.job_requests import PlanRequest
from console.domain.plan import SnapshotInfo
from console.redact import MASK, redact_text
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import ReadOnlyError
from console.services.infra.access import ClusterClient, cluster_of, open_admin
from console.services.infra.workspace import Workspace
from console.services.plan.planner import Planner
from console.services.read.reader import ClusterReader
from jobs.timestamps import BrokerSearch

UNRESOLVABLE = CredentialsRef("env:RMQ_TEST_NEVER_SET_AK", "env:RMQ_TEST_NEVER_SET_SK")


def test_a_read_only_cluster_refuses_a_writer_before_anything_is_resolved_or_opened() -> None:
    cluster = ClusterConfig("prod", ("127.0.0.1:9876",), read_only=True, credentials=UNRESOLVABLE)
    # Had it resolved the credentials first, this would be a ConfigError about the variable.
    with pytest.raises(ReadOnlyError, match="'prod' is read-only"):
        open_admin(cluster, write=True)


async def test_a_reader_refuses_writes_before_sending() -> None:
    # Nothing listens on port 1: a write that got as far as the network would fail otherwise.
    for read_only in (True, False):
        cluster = ClusterConfig("c", ("127.0.0.1:1",), read_only=read_only)
        async with open_admin(cluster, timeout=0.5) as admin:
            with pytest.raises(ReadOnlyError):
                await admin.update_consumer_offset("127.0.0.1:1", "g", "t", 0, 5)
            with pytest.raises(ReadOnlyError):
                await admin.reset_offset("127.0.0.1:1", "g", "t", timestamp_ms=0)


def test_the_factory_resolves_hides_and_remembers_the_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    value = secrets.token_urlsafe(12)
    monkeypatch.setenv("RMQ_TEST_AK", "ops-key")
    monkeypatch.setenv("RMQ_TEST_SK", value)
    cluster = ClusterConfig(
        "prod",
        ("127.0.0.1:9876",),
        credentials=CredentialsRef("env:RMQ_TEST_AK", "env:RMQ_TEST_SK"),
    )
    admin = open_admin(cluster)
    assert isinstance(admin, ClusterClient)
    assert cluster_of(admin) is cluster
    assert redact_text(value) == MASK
    asyncio.run(admin.close())


def test_a_planner_takes_the_credential_references_of_its_clients_cluster(tmp_path: Path) -> None:
    refs = CredentialsRef("env:PROD_AK", "file:/etc/rmq/prod.secret")
    cluster = ClusterConfig("prod", ("127.0.0.1:9876",), credentials=refs)
    # What open_admin returns, without resolving anything.
    factory_made = ClusterClient(cluster, timeout=1, credentials=None, read_only="reading")
    ws = Workspace(tmp_path)
    planner = Planner(ws, runner=None, reader=ClusterReader(factory_made, None))  # type: ignore[arg-type]
    assert planner.credentials == refs
    assert planner.namesrv == ("127.0.0.1:9876",)
    other = CredentialsRef("env:OTHER_AK", "env:OTHER_SK")
    explicit = Planner(ws, None, reader=ClusterReader(factory_made, None), credentials=other)  # type: ignore[arg-type]
    assert explicit.credentials == other
    # A client built by hand (a tool's, a test's) names no cluster: no credentials to pass on.
    by_hand = ClusterReader(AdminClient("127.0.0.1:9876"), None)
    assert Planner(ws, None, reader=by_hand).credentials is None  # type: ignore[arg-type]


def test_the_plan_job_reaches_the_cluster_as_the_planners_client_does(tmp_path: Path) -> None:
    far = ClusterConfig(
        "far",
        ("127.0.0.1:9876",),
        address_map=(("10.1.2.3", "127.0.0.1"),),
        socks="127.0.0.1:1080",
    )
    admin = open_admin(far)
    planner = Planner(Workspace(tmp_path), runner=None, reader=ClusterReader(admin, None))  # type: ignore[arg-type]
    assert (planner.address_map, planner.socks) == (far.address_map, far.socks)
    # What the executors get, through the request's JSON, opens a client that goes there too.
    sent = PlanRequest.from_json(request(address_map=far.address_map, socks=far.socks).to_json())
    search = BrokerSearch.for_request(sent)
    assert (search.address_map, search.socks) == (far.address_map, far.socks)
    assert search._config("10.1.2.3:10911").reach() == far.reach()
    asyncio.run(admin.close())


def request(**kw: object) -> PlanRequest:
    return PlanRequest(
        plan_id="p",
        spec={},
        snapshot_uri="file:///s.parquet",
        snapshot=SnapshotInfo("prod", "s", 0),
        out_uri="file:///p",
        created_at_ms=0,
        **kw,  # type: ignore[arg-type]
    )


def test_a_plan_request_carries_references_and_round_trips() -> None:
    refs = {"access_key": "env:PROD_AK", "secret_key": "file:/etc/rmq/prod.secret"}
    req = request(credentials=refs, namesrv=("10.0.0.1:9876",))
    assert PlanRequest.from_json(req.to_json()) == req
    assert request().credentials is None


@pytest.mark.parametrize(
    "refs",
    [
        {"access_key": "env:AK", "secret_key": "hunter2-the-value"},
        {"access_key": "AKIA-the-value", "secret_key": "env:SK"},
        {"access_key": "env:AK"},
    ],
)
def test_a_plan_request_refuses_anything_but_references(refs: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="credentials") as info:
        request(credentials=refs)
    assert "hunter2" not in str(info.value)
    assert "AKIA" not in str(info.value)

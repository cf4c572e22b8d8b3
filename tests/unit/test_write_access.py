"""One place decides whether a cluster may be written (console/services/infra/access.py,
`write_refusal`), and every writer obeys it itself: the session before it opens anything, the
writer, and a broadcasting client's offsets.json rewrite, even when handed an access made by
hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.config import ClusterConfig, Config
from console.errors import Refused
from console.services.apply.client_file_writer import rewrite_store_file
from console.services.apply.intents import ApplyPlan
from console.services.apply.session import run_session
from console.services.apply.writer import Applier
from tests.support.writes import confirm_every_name, write_access

PROD = ClusterConfig("prod", ("10.0.0.1:9876",), read_only=True)


def offsets_file(tmp_path: Path) -> Path:
    path = tmp_path / "10.0.0.9@DEFAULT" / "news" / "offsets.json"
    path.parent.mkdir(parents=True)
    table = {'{"brokerName":"broker-a","queueId":0,"topic":"orders"}': 10}
    path.write_text(json.dumps({"offsetTable": table}))
    return path


def test_the_client_file_rewrite_refuses_a_read_only_cluster(tmp_path: Path) -> None:
    path = offsets_file(tmp_path)
    before = path.read_bytes()
    access = write_access(None, tmp_path / "ws", "prod", read_only=True)
    with pytest.raises(Refused, match="'prod' is read-only"):
        rewrite_store_file(access, path, {("orders", "broker-a", 0): 3})
    assert path.read_bytes() == before
    assert not path.with_name("offsets.json.bak").exists()


def test_the_writer_refuses_an_access_to_a_read_only_cluster(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="'prod' is read-only"):
        Applier(write_access(None, tmp_path, "prod", read_only=True))


async def test_the_session_refuses_before_it_opens_anything(tmp_path: Path) -> None:
    opened: list[str] = []

    def open_access(cluster: ClusterConfig, config: Config) -> object:
        opened.append(cluster.name)
        raise AssertionError("a read-only cluster is never opened for writing")

    result = await run_session(
        PROD,
        Config(clusters=(PROD,), workspace=str(tmp_path)),
        ApplyPlan("p1"),
        confirm_every_name,
        open_access=open_access,  # type: ignore[arg-type]
    )
    assert result.refused == (
        "cluster 'prod' is read-only (read_only: true in the config): nothing is written to it",
    )
    assert result.exit_code == 2
    assert opened == []

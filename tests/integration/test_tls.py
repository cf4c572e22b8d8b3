"""TLS against real brokers: the newest-release cluster (conftest.newest_cluster), whose name
server and brokers enforce mutual TLS with certificates of a CA the sandbox made.

Read over TLS, the cluster's brokers, topics and groups are what mqadmin (the official Java
tools, over TLS with the properties a `tls:` maps to) finds in the same stores; every way of
getting TLS wrong fails at once, exit 2, with a line that names the cause (plaintext, which an
enforcing server hangs up on without a byte as a stopping one does, with a line naming both);
the console reads the cluster through its network process, and shows a TLS refusal as a
configuration problem, never as a broker down; unverified TLS is in the banner at 80x24; no key
file's content or path lands in the workspace or a log. The suite's read/plan/apply/undo tests
also run on this cluster: tests/integration/test_newest_release.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.cli import main
from console.config import Config, load_config
from console.remote.proxy import remote_sources
from console.sandbox import scenario
from console.sandbox.certs import new_authority, write_cert
from console.sandbox.mqadmin_oracle import parse_consumer_progress
from console.sandbox.runner import Sandbox
from console.ui.app import ConsoleApp, make_app
from console.ui.screens.dialogs import ErrorDialog
from console.ui.themes import PROJECT_THEMES
from tests.connect import ConnectServer
from tests.support.processes import processes
from tests.support.releases import NEWEST_RELEASE
from tests.support.terminal import Tmux
from tests.ui.helpers import banner as banner_text
from tests.ui.helpers import settle, shown, status

#: Groups whose offsets and topics stay still after the seed: both tools must agree exactly.
STATIC_GROUPS = (scenario.GROUP_CAUGHT_UP, scenario.GROUP_DLQ)
#: The request timeout of the configs here: every refusal must come well within it.
TIMEOUT_S = 5.0


def entry(cluster: Sandbox, name: str, **tls: Any) -> dict[str, Any]:
    """A config entry for the cluster under `name`, its `tls:` changed by `tls` (None drops a
    key; `tls=False` drops TLS)."""
    out = cluster.config_entry(name)
    if tls.pop("off", False):
        out.pop("tls")
        return out
    settings = {**out["tls"], **tls}
    out["tls"] = {k: v for k, v in settings.items() if v is not None}
    return out


@pytest.fixture(scope="module")
def config_file(newest_cluster: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One config: the cluster as it should be, and as it should not be."""
    d = tmp_path_factory.mktemp("tls-config")
    stranger = write_cert(new_authority("not the cluster's CA").cert, d / "other-ca.pem")
    clusters = [
        entry(newest_cluster, "newest"),
        entry(newest_cluster, "plaintext", off=True),
        entry(newest_cluster, "unknown-ca", ca=str(stranger)),
        entry(newest_cluster, "wrong-name", server_name="rocketmq.example"),
        entry(newest_cluster, "no-client-cert", cert=None, key=None),
        {**entry(newest_cluster, "unverified", ca=None, verify=False), "colour": "red"},
    ]
    path = d / "config.yaml"
    path.write_text(
        yaml.safe_dump({"clusters": clusters, "timeout": TIMEOUT_S, "workspace": str(d / "ws")})
    )
    return path


@pytest.fixture
def cli(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config_file))
    return config_file


def run(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str, float]:
    started = time.monotonic()
    code = main(list(argv))
    took = time.monotonic() - started
    out, err = capfd.readouterr()
    return code, out, err, took


def test_brokers_topics_and_groups_over_tls_are_what_mqadmin_finds(
    newest_cluster: Sandbox, cli: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code, out, err, _ = run(capfd, "brokers", "--cluster", "newest", "--json")
    assert code == 0, err
    version = "V" + NEWEST_RELEASE.replace(".", "_")
    assert {(b["broker"], b["addr"], b["status"], b["version"]) for b in json.loads(out)} == {
        (name, addr, "UP", version) for name, addr in newest_cluster.broker_addrs.items()
    }

    code, out, err, _ = run(capfd, "topics", "--cluster", "newest", "--json")
    assert code == 0, err
    listed = asyncio.run(newest_cluster.mqadmin.run("topicList"))
    theirs = {line.strip() for line in listed.splitlines() if line.strip()}
    ours = set(json.loads(out))
    assert {t.name for t in scenario.TOPICS} <= ours
    assert ours <= theirs  # mqadmin lists the system topics too

    code, out, err, _ = run(capfd, "groups", "--cluster", "newest", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["partial"] is False
    groups = {g["group"]: g for g in doc["groups"]}
    assert {g.name for g in scenario.GROUPS} <= set(groups)
    for group in STATIC_GROUPS:
        code, out, err, _ = run(capfd, "lag", "-g", group, "--cluster", "newest", "--json")
        assert code == 0, err
        lag = json.loads(out)
        text = asyncio.run(newest_cluster.mqadmin.run("consumerProgress", "-g", group))
        progress = parse_consumer_progress(text)
        assert {
            (q["topic"], q["broker"], q["queue_id"]): q["committed"] for q in lag["queues"]
        } == {(r.topic, r.broker_name, r.queue_id): r.consumer_offset for r in progress.rows}, group
        assert groups[group]["total_lag"] == sum(
            r.diff for r in progress.rows if not r.topic.startswith("%RETRY%")
        ), group


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        (
            "plaintext",
            "closed the connection before answering (a server starting or stopping does this; "
            "so does one that requires TLS: `tls:` in the config)",
        ),
        ("unknown-ca", ": TLS certificate for 127.0.0.1 not trusted (unknown CA"),
        ("wrong-name", ": TLS certificate is not valid for rocketmq.example (name mismatch)"),
        ("no-client-cert", "client certificate (mutual TLS"),
    ],
)
def test_tls_gone_wrong_fails_at_once_naming_the_cause(
    newest_cluster: Sandbox,
    cli: Path,
    capfd: pytest.CaptureFixture[str],
    cluster: str,
    expected: str,
) -> None:
    for command in (["lag", "-g", scenario.GROUP_OFFLINE], ["groups"], ["brokers"]):
        code, out, err, took = run(capfd, *command, "--cluster", cluster)
        assert code == 2, (command, out, err)
        (line,) = err.splitlines()
        assert line.startswith(f"rmq-console: error: {newest_cluster.namesrv_addr}"), line
        assert expected in line, line
        assert took < TIMEOUT_S, f"{command} took {took:.1f}s to fail"


def test_the_command_line_ca_without_the_client_certificate_mutual_tls_wants(
    newest_cluster: Sandbox, cli: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    tls = newest_cluster.tls
    assert tls is not None
    assert tls.ca is not None
    namesrv = ["--namesrv", newest_cluster.namesrv_addr]
    code, _, err, _ = run(capfd, "brokers", *namesrv, "--tls-ca", tls.ca)
    assert code == 2
    assert "client certificate (mutual TLS" in err
    code, _, err, _ = run(capfd, "brokers", *namesrv)
    assert code == 2
    assert "so does one that requires TLS: `tls:` in the config" in err


def child_command_lines() -> list[str]:
    """The command lines of this process's children (the console's network process among them)."""
    me = os.getpid()
    return [p.command_line for p in processes() if p.ppid == me]


def console_for(config_file: Path, name: str, workspace: Path) -> ConsoleApp:
    loaded = load_config(config_file)
    cluster = loaded.cluster(name)
    config = Config(
        clusters=(cluster,),
        refresh_interval=3600,
        timeout=TIMEOUT_S,
        theme="rmq-dark",
        workspace=str(workspace),
    )
    return make_app(config, remote_sources(config), cluster=cluster, theme_paths=[PROJECT_THEMES])


async def test_the_console_reads_over_tls_and_names_a_tls_refusal(
    newest_cluster: Sandbox, config_file: Path, tmp_path: Path
) -> None:
    app = console_for(config_file, "newest", tmp_path / "ws")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        rows = {r["broker"]: r["state"] for r in shown(app, "#brokers")}
        assert rows == {name: "UP" for name in newest_cluster.broker_addrs}
        # The network process read the TLS files itself: their paths came in its hello, not
        # on its command line.
        tls = newest_cluster.tls
        assert tls is not None
        # (The sandbox's own Java clients, children too, get theirs as system properties.)
        ours = [c for c in child_command_lines() if "console." in c]
        assert any("console.remote.network_process" in c for c in ours), ours
        assert not any(str(tls.key) in c or str(tls.cert) in c for c in ours), ours
        assert "UNVERIFIED" not in banner_text(app)
        await pilot.press("g")
        await settle(pilot)
        assert scenario.GROUP_OFFLINE in {r["group"] for r in shown(app)}

    # Plaintext to the enforcing name server: nothing can be read, and the dialog says why.
    refused = console_for(config_file, "plaintext", tmp_path / "ws")
    async with refused.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        dialog = refused.screen
        assert isinstance(dialog, ErrorDialog), type(dialog)
        assert "so does one that requires TLS: `tls:` in the config" in dialog.message
        assert newest_cluster.namesrv_addr in dialog.message
        await pilot.press("escape")
        await settle(pilot)
        assert "DOWN" not in status(refused)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    session = Tmux(f"rmqc-tls-{time.monotonic_ns() % 10**8}")
    yield session
    session.kill()


def test_unverified_tls_is_in_the_banner_at_80x24(
    newest_cluster: Sandbox, config_file: Path, tmux: Tmux
) -> None:
    console = Path(sys.executable).with_name("rmq-console")
    tmux.start(
        f"env RMQ_CONSOLE_CONFIG={shlex.quote(str(config_file))} NO_COLOR=1 "
        f"{shlex.quote(str(console))} --cluster unverified"
    )
    screen = tmux.wait_for(
        lambda s: "broker-a" in s and "broker-b" in s and "UP" in s, "the cluster overview"
    )
    (banner,) = [line for line in screen.splitlines() if "unverified" in line][:1]
    assert "UNVERIFIED TLS" in banner, screen
    tmux.keys("q")


def test_no_key_file_lands_in_the_workspace_or_a_log(
    newest_cluster: Sandbox,
    cli: Path,
    capfd: pytest.CaptureFixture[str],
    warm_cli: ConnectServer,
    tmp_path: Path,
) -> None:
    """A to-timestamp plan (its lookups in the Spark Connect server's executors, which read the
    TLS files themselves) and a snapshot: neither the key nor where it is ends up anywhere the
    console writes."""
    tls = newest_cluster.tls
    assert tls is not None
    assert tls.key is not None
    spec = tmp_path / "spec.yaml"
    since = int(time.time() * 1000) - 60_000
    spec.write_text(
        yaml.safe_dump(
            {
                "scope": {"cluster": "newest", "groups": [scenario.GROUP_OFFLINE]},
                "strategy": {"to-timestamp": since},
            }
        )
    )
    code, _, err, _ = run(capfd, "plan", "--cluster", "newest", "--spec", str(spec))
    assert code == 0, err
    code, _, err, _ = run(capfd, "snapshot", "--cluster", "newest", "-g", scenario.GROUP_OFFLINE)
    assert code == 0, err
    key = Path(tls.key)
    secret = key.read_text().strip().splitlines()[1]  # a line of the key itself
    workspace = Path(load_config(cli).workspace_path)
    written = [p for p in workspace.rglob("*") if p.is_file()]
    assert any(p.name == "plan.json" for p in written)
    logs = [p for p in warm_cli.cache.rglob("*.log") if p.is_file()]
    for path in [*written, *logs]:
        data = path.read_bytes()
        assert secret.encode() not in data, path
        assert str(key).encode() not in data, path
        assert b"client.key" not in data, path

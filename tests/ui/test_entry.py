"""How `rmq-console` with no subcommand picks what to open."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from console.cli import build_parser
from console.cli.target import console_target

CONFIG = """\
clusters:
  - name: prod
    namesrv: 10.0.0.9:9876
    colour: red
    read_only: true
  - name: staging
    namesrv: [10.1.0.9:9876]
refresh_interval: 2
theme: rmq-light
keymap: {refresh: f5}
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(path))
    return path


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_no_cluster_named_opens_the_clusters_screen(config: Path) -> None:
    cfg, cluster = console_target(parse())
    assert cluster is None
    assert [c.name for c in cfg.clusters] == ["prod", "staging"]
    assert (cfg.refresh_interval, cfg.theme, dict(cfg.keymap)) == (
        2.0,
        "rmq-light",
        {"refresh": "f5"},
    )


def test_cluster_by_name(config: Path) -> None:
    _, cluster = console_target(parse("--cluster", "prod"))
    assert cluster is not None
    assert (cluster.name, cluster.read_only, cluster.colour) == ("prod", True, "red")


def test_namesrv_opens_that_cluster(config: Path) -> None:
    cfg, cluster = console_target(parse("--namesrv", "127.0.0.1:9876", "--timeout", "7"))
    assert cluster is not None
    assert cluster.namesrv == ("127.0.0.1:9876",)
    assert cfg.timeout == 7.0

"""A cluster's `tls:` in the config and on the command line, and where it travels: to the plan
job as file paths, to mqadmin as its system properties."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

import pytest

from console.cli.arguments import add_target_arguments
from console.cli.target import resolve_target
from console.config import ConfigError, TlsRef, load_config
from console.domain import mqadmin
from console.domain.job_requests import PlanRequest
from console.domain.plan import SnapshotInfo


def write(tmp_path: Path, tls: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(f"clusters:\n  - name: prod\n    namesrv: 10.0.0.1:9876\n{tls}")
    return path


def test_true_verifies_against_the_system_cas(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "    tls: true\n"), environ={})
    assert config.cluster("prod").tls == TlsRef()


def test_false_or_absent_is_plaintext(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "    tls: false\n"), environ={}).clusters[0].tls is None
    assert load_config(write(tmp_path, ""), environ={}).clusters[0].tls is None


def test_a_mapping_with_paths_relative_to_the_config_file(tmp_path: Path) -> None:
    text = (
        "    tls:\n"
        "      ca: certs/ca.pem\n"
        "      cert: /etc/rmq/console.pem\n"
        "      key: ~/rmq/console.key\n"
        "      server_name: mq.prod\n"
    )
    tls = load_config(write(tmp_path, text), environ={}).cluster("prod").tls
    assert tls == TlsRef(
        ca=str(tmp_path.resolve() / "certs" / "ca.pem"),
        cert="/etc/rmq/console.pem",
        key="~/rmq/console.key",
        verify=True,
        server_name="mq.prod",
    )


@pytest.mark.parametrize(
    ("tls", "line", "message"),
    [
        ("    tls: yes please\n", 4, "clusters.0.tls: expected true, false or a mapping"),
        ("    tls:\n      cafile: /x\n", 5, "clusters.0.tls.cafile: unknown TLS setting"),
        ("    tls:\n      cert: /c.pem\n", 4, "clusters.0.tls.key: a client certificate needs"),
        ("    tls:\n      verify: maybe\n", 5, "clusters.0.tls.verify: expected true or false"),
    ],
)
def test_bad_tls_settings_name_the_line(tmp_path: Path, tls: str, line: int, message: str) -> None:
    path = write(tmp_path, tls)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert str(info.value).startswith(f"{path}:{line}: {message}")


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_target_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_command_line_speaks_tls_to_a_bare_namesrv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(write(tmp_path, "")))
    assert resolve_target(parse("--namesrv", "10.0.0.9:9876")).cluster.tls is None
    assert resolve_target(parse("--namesrv", "10.0.0.9:9876", "--tls")).cluster.tls == TlsRef()
    monkeypatch.chdir(tmp_path)
    target = resolve_target(parse("--namesrv", "10.0.0.9:9876", "--tls-ca", "ca.pem"))
    assert target.cluster.tls == TlsRef(ca=str(tmp_path.resolve() / "ca.pem"))
    with pytest.raises(ConfigError, match="--tls and --tls-ca go with --namesrv"):
        resolve_target(parse("--cluster", "prod", "--tls"))


def test_the_plan_request_carries_the_paths_only() -> None:
    tls = TlsRef(ca="/etc/rmq/ca.pem", cert="/etc/rmq/c.pem", key="/etc/rmq/c.key")
    info = SnapshotInfo("prod", "s1", 1)
    request = PlanRequest(
        plan_id="p", spec={}, snapshot_uri="file:///s", snapshot=info, out_uri="file:///o",
        created_at_ms=1, tls=tls.to_dict(),
    )  # fmt: skip
    again = PlanRequest.from_json(request.to_json())
    assert again.tls is not None
    assert TlsRef.from_dict(again.tls) == tls


def test_mqadmin_lines_carry_the_tls_properties() -> None:
    tls = TlsRef(ca="/etc/rmq/ca.pem", cert="/etc/rmq/c.pem", key="/etc/rmq/c.key")
    lines = mqadmin.with_tls([*mqadmin.groups(["10.0.0.1:9876"]), "# a note"], tls)
    words = shlex.split(lines[0])
    assert words[1:] == ["mqadmin", "consumerProgress", "-n", "10.0.0.1:9876"]
    assert words[:1] == [
        "JAVA_OPT=-Dtls.enable=true -Dtls.test.mode.enable=false -Dtls.client.authServer=true "
        "-Dtls.client.trustCertPath=/etc/rmq/ca.pem -Dtls.client.certPath=/etc/rmq/c.pem "
        "-Dtls.client.keyPath=/etc/rmq/c.key"
    ]
    assert lines[1] == "# a note"
    unverified = mqadmin.java_tls_properties(TlsRef(ca="/x", verify=False))
    assert unverified["tls.client.authServer"] == "false"
    assert "tls.client.trustCertPath" not in unverified
    assert mqadmin.with_tls(["mqadmin clusterList -n a:1"], None) == ["mqadmin clusterList -n a:1"]

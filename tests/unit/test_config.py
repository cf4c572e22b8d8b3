"""Config: layering, and errors that name the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.config import Config, ConfigError, load_config

GOOD = """\
clusters:
  - name: prod
    namesrv: [10.0.0.1:9876, 10.0.0.2:9876]
    colour: red
    read_only: true
    credentials:
      access_key: env:PROD_AK
      secret_key: file:{secret}
  - name: staging
    namesrv: 10.1.0.1:9876
refresh_interval: 2
keymap:
  refresh: f5
spark_master: spark://spark:7077
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_file_then_environment(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    path = write(tmp_path, GOOD.format(secret=secret))
    config = load_config(path, environ={"RMQ_CONSOLE_SPARK_MASTER": "local[2]", "PROD_AK": "x"})
    prod = config.cluster("prod")
    assert prod.namesrv == ("10.0.0.1:9876", "10.0.0.2:9876")
    assert prod.read_only
    assert prod.colour == "red"
    assert config.cluster("staging").namesrv == ("10.1.0.1:9876",)
    assert config.refresh_interval == 2.0
    assert config.keymap == {"refresh": "f5"}
    assert config.spark_master == "local[2]"  # environment beats the file
    assert config.theme == "rmq-dark"  # default kept


def test_credentials_are_resolved_only_on_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    config = load_config(write(tmp_path, GOOD.format(secret=secret)), environ={})
    ref = config.cluster("prod").credentials
    assert ref is not None
    monkeypatch.setenv("PROD_AK", "the-ak")
    creds = ref.resolve()
    assert (creds.access_key, creds.secret_key) == ("the-ak", "s3cret")
    assert "s3cret" not in repr(creds)


def test_environment_variable_points_at_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "refresh_interval: 9\n")
    assert load_config(environ={"RMQ_CONSOLE_CONFIG": str(path)}).refresh_interval == 9.0


def test_missing_default_file_means_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert load_config(environ={}) == Config()


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("clusters:\n  - name: a\n    namesrv: nope\n", 3, "not a host:port"),
        ("clusters:\n  - name: a\n", 2, "missing 'namesrv'"),
        ("refresh_interval: soon\n", 1, "expected a number"),
        ("theme: x\ncolours: 3\n", 2, "unknown setting"),
        (
            "clusters:\n  - name: a\n    namesrv: h:1\n    credentials:\n"
            "      access_key: AKIA123\n      secret_key: env:X\n",
            5,
            "must be a reference",
        ),
        ("clusters:\n  - name: a\n    namesrv: h:1\n  - name: a\n    namesrv: h:2\n", 4, "dup"),
        ("clusters: [\n", 2, "invalid YAML"),
        ("clusters:\n  - name: a\n    namesrv: h:1\n    read_only: yes please\n", 4, "true or"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    message = str(info.value)
    assert message.startswith(f"{path}:{line}:"), message
    assert words in message


def test_unknown_cluster_lists_the_known_ones(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD.format(secret="/x")), environ={})
    with pytest.raises(ConfigError, match="known: prod, staging"):
        config.cluster("qa")


def test_explicit_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "absent.yaml", environ={})

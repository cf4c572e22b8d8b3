"""The secrets backstop: a value hidden once is masked in every outward text of the process."""

from __future__ import annotations

import argparse
import json
import secrets
from pathlib import Path

import pytest

from console import __version__, cli
from console.config import CredentialsRef
from console.errors import BadInput
from console.redact import MASK, hide, redact_text


def secret(prefix: str = "s") -> str:
    # Unique per test: the hidden set is process-wide and never shrinks.
    return f"{prefix}-{secrets.token_urlsafe(12)}"


def test_a_hidden_value_is_masked_wherever_it_appears() -> None:
    value = secret()
    hide(value)
    text = f"refused {value}; again: {value}."
    assert redact_text(text) == f"refused {MASK}; again: {MASK}."


def test_the_mask_tells_nothing_of_the_length() -> None:
    short, long = secret("a"), secret("a-much-longer-secret-value")
    hide(short)
    hide(long)
    assert redact_text(f"[{short}]") == redact_text(f"[{long}]") == f"[{MASK}]"


def test_a_secret_containing_another_is_masked_whole() -> None:
    inner = secret()
    outer = f"x{inner}y"
    hide(inner)
    hide(outer)
    assert redact_text(f"<{outer}>") == f"<{MASK}>"


def test_escaped_spellings_are_masked_too() -> None:
    value = secret() + "\"q'\\"
    hide(value)
    for text in (json.dumps({"remark": value}), repr(RuntimeError(value)), value):
        assert MASK in redact_text(text)
        assert value not in redact_text(text)
        assert json.dumps(value)[1:-1] not in redact_text(text)


def test_nothing_hidden_nothing_changed() -> None:
    hide("")
    hide(None)
    text = "an ordinary message: 3 brokers, 0 down"
    assert redact_text(text) == text


def test_resolving_credentials_hides_the_secret_not_the_access_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    value = secret()
    monkeypatch.setenv("RMQ_TEST_AK", "operator-key")
    monkeypatch.setenv("RMQ_TEST_SK", value)
    assert redact_text(value) == value  # not known to this process yet
    creds = CredentialsRef("env:RMQ_TEST_AK", "env:RMQ_TEST_SK").resolve()
    assert creds.secret_key == value
    assert (
        redact_text(f"{creds.access_key} signed with {value}") == f"operator-key signed with {MASK}"
    )


def test_the_cli_error_line_is_redacted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    value = secret()
    hide(value)

    def failing(args: argparse.Namespace) -> int:
        raise BadInput(f"the broker echoed {value}")

    def parser(modules: object = ()) -> argparse.ArgumentParser:
        p = argparse.ArgumentParser()
        p.set_defaults(handler=failing)
        return p

    monkeypatch.setattr(cli, "build_parser", parser)
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert err == f"rmq-console: error: the broker echoed {MASK}\n"


def test_a_bug_line_and_its_traceback_file_are_redacted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    value = secret()
    hide(value)

    def failing(args: argparse.Namespace) -> int:
        raise ValueError(f"the broker echoed {value}")

    def parser(modules: object = ()) -> argparse.ArgumentParser:
        p = argparse.ArgumentParser()
        p.set_defaults(handler=failing)
        return p

    monkeypatch.setattr(cli, "build_parser", parser)
    monkeypatch.setenv("RMQ_CONSOLE_CACHE", str(tmp_path))
    monkeypatch.delenv("RMQ_CONSOLE_DEBUG", raising=False)
    assert cli.main([]) == 70
    err = capsys.readouterr().err
    (report,) = (tmp_path / "crashes").iterdir()
    assert err == (
        f"rmq-console: bug: ValueError in rmq-console {__version__}: the broker echoed {MASK}; "
        f"the traceback is in {report}\n"
    )
    text = report.read_text()
    assert "Traceback (most recent call last)" in text
    assert f"ValueError: the broker echoed {MASK}" in text
    assert value not in text
    assert report.stat().st_mode & 0o077 == 0  # the owner's only

    monkeypatch.setenv("RMQ_CONSOLE_DEBUG", "1")
    assert cli.main([]) == 70
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert value not in err
    assert len(list((tmp_path / "crashes").iterdir())) == 1  # printed, not written

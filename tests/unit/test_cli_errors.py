"""What the command line does with what a command raises: the errors an operator can act on (the
UserError family, the wire client's errors) are one line and exit 2, whatever their Python base
(a SpecError is a ValueError too); anything else is a bug: one line saying so and where its
traceback was written (exit 70), or the traceback itself with --debug or RMQ_CONSOLE_DEBUG=1.
A ValueError is no longer taken for bad input: it is where real bugs hid."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from console import __version__
from console.cli import history as history_cli
from console.cli import main
from console.config import ConfigError
from console.domain.client_offsets import ClientOffsetsError
from console.domain.journal import JournalError
from console.domain.spec import SpecError
from console.domain.walkthrough import WalkthroughError
from console.errors import BadFile, BadInput, Refused, UserError
from console.rocketmq.errors import RequestTimeout
from console.services.walkthrough.guided_run import AnswerError


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config.yaml"
    config.write_text(f"workspace: {tmp_path / 'ws'}\nclusters: [{{name: c, namesrv: [h:1]}}]\n")
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    monkeypatch.setenv("RMQ_CONSOLE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RMQ_CONSOLE_DEBUG", raising=False)
    return tmp_path


def raising(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """`rmq-console history` raises `exc`."""

    def handler(args: argparse.Namespace) -> int:
        raise exc

    monkeypatch.setattr(history_cli, "show_history", handler)


@pytest.mark.parametrize(
    "exc",
    [
        SpecError("strategy.shift-by", "expected an integer"),
        JournalError("journal/x.json: not a whole journal"),
        ConfigError("config.yaml:3: clusters: expected a list"),
        WalkthroughError("ours.yaml:2", "unknown field"),
        ClientOffsetsError("offsets.json: not an offsets file"),
        AnswerError("give a time, e.g. 10:05"),
        Refused(["the plan is 20 min old", "re-plan"]),
        BadFile("plans/p/plan.json", "not JSON", line=3),
        BadInput("plan id '..' cannot be used as a file name"),
        RequestTimeout("127.0.0.1:10911", 46, 3.0),
    ],
)
def test_an_error_the_operator_can_act_on_is_one_line_and_exit_2(
    configured: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    exc: Exception,
) -> None:
    raising(monkeypatch, exc)
    assert main(["history"]) == 2
    err = capsys.readouterr().err
    assert err == f"rmq-console: error: {' '.join(str(exc).splitlines())}\n"
    assert not (configured / "cache" / "crashes").exists()


def test_the_user_errors_are_one_family() -> None:
    for kind in (SpecError, JournalError, ConfigError, WalkthroughError, Refused, BadFile):
        assert issubclass(kind, UserError)
    assert issubclass(BadFile, ValueError)  # readers that refused on ValueError still do


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("not enough values to unpack"),
        AttributeError("'list' object has no attribute 'get'"),
        KeyError("spec"),
        OSError(5, "Input/output error"),
    ],
)
def test_anything_else_is_a_bug_with_its_traceback_in_a_file(
    configured: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    exc: Exception,
) -> None:
    raising(monkeypatch, exc)
    assert main(["history", "--cluster", "c"]) == 70
    err = capsys.readouterr().err
    (report,) = (configured / "cache" / "crashes").iterdir()
    kind = type(exc).__name__
    assert err == (
        f"rmq-console: bug: {kind} in rmq-console {__version__}: {exc}; the traceback is in "
        f"{report}\n"
    )
    text = report.read_text()
    assert text.startswith(f"rmq-console {__version__}, Python ")
    assert "command: rmq-console history --cluster c\n" in text
    assert "Traceback (most recent call last)" in text
    assert f"in handler\n    raise exc\n{kind}" in text


def test_a_reader_that_closed_the_pipe_is_no_bug(
    configured: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # `rmq-console lag -g G | head`: head leaves once it has its lines.
    raising(monkeypatch, BrokenPipeError(32, "Broken pipe"))
    assert main(["history", "--cluster", "c"]) == 141
    assert "bug" not in capfd.readouterr().err
    assert not (configured / "cache" / "crashes").exists()


def test_debug_prints_the_traceback_instead(
    configured: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    raising(monkeypatch, RuntimeError("boom"))
    assert main(["--debug", "history"]) == 70
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last)")
    assert err.endswith(f"rmq-console: bug: RuntimeError in rmq-console {__version__}: boom\n")
    monkeypatch.setenv("RMQ_CONSOLE_DEBUG", "1")
    assert main(["history"]) == 70
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    assert not (configured / "cache" / "crashes").exists()


def test_a_report_that_cannot_be_written_says_so(
    configured: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (configured / "cache").write_text("a file where the cache directory should be")
    raising(monkeypatch, RuntimeError("boom"))
    assert main(["history"]) == 70
    err = capsys.readouterr().err
    assert err.startswith(f"rmq-console: bug: RuntimeError in rmq-console {__version__}: boom ")
    assert "the traceback could not be written" in err
    assert err.endswith("run with --debug to see it)\n")


def test_bad_input_on_the_command_line_is_one_line(
    configured: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lag", "-g", "g", "--namesrv", "nohost"]) == 2
    assert capsys.readouterr().err == (
        "rmq-console: error: --namesrv: not a host:port address: 'nohost'\n"
    )
    assert main(["apply", "../up", "--cluster", "c"]) == 2
    assert "nothing was written" in capsys.readouterr().err


def test_the_command_line_starts_without_pyarrow_or_spark() -> None:
    # The error family is imported by the entry point: it must stay light.
    probe = "import sys, console.cli; print(sorted(m for m in sys.modules if m in PROBED))"
    code = f"PROBED = {{'pyarrow', 'pyspark', 'textual'}}\n{probe}"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_bad_file_crosses_a_process_boundary_as_itself() -> None:
    import pickle

    bad = BadFile("plans/p/plan.json", "not JSON", line=3)
    back = pickle.loads(pickle.dumps(bad))
    assert type(back) is BadFile
    assert (str(back), back.path, back.line, back.problem) == (
        "plans/p/plan.json:3: not JSON",
        "plans/p/plan.json",
        3,
        "not JSON",
    )

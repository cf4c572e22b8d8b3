"""Terminals for the tests that drive the console as an operator would: a tmux session at 80x24
(`Tmux`; its fixture, `tmux`, is tests/integration/conftest.py's), and the CLI on a pty of its
own."""

from __future__ import annotations

import fcntl
import os
import select
import shlex
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from console.locations import CACHE_ENV
from console.sandbox.runner import Sandbox

DEADLINE = 60.0


class Tmux:
    """One tmux server per terminal (its own socket, `-L`): the test streams run at once, and
    a session started on a shared server as another stream's last session closes meets a
    server on its way out ("server exited unexpectedly")."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _tmux(self, *args: str) -> list[str]:
        return ["tmux", "-L", self.name, *args]

    def start_console(self, config: Path, *args: str, spark_cache: Path | None = None) -> None:
        """`rmq-console ARGS` reading `config`, without colour; with `spark_cache`, it finds the
        Spark Connect server kept there, as after `spark up`."""
        console = Path(sys.executable).with_name("rmq-console")
        env = [f"RMQ_CONSOLE_CONFIG={shlex.quote(str(config))}", "NO_COLOR=1"]
        if spark_cache is not None:
            env.append(f"{CACHE_ENV}={shlex.quote(str(spark_cache))}")
        self.start(" ".join(["env", *env, shlex.quote(str(console)), *args]))

    def start(self, command: str, size: tuple[int, int] = (80, 24)) -> None:
        cols, rows = size
        subprocess.run(
            self._tmux(
                "new-session",
                "-d",
                "-s",
                self.name,
                "-x",
                str(cols),
                "-y",
                str(rows),
                command,
            ),
            check=True,
        )

    def keys(self, *keys: str) -> None:
        subprocess.run(self._tmux("send-keys", "-t", self.name, *keys), check=True)

    def text(self, *keys: str) -> None:
        """Type literally (no key-name lookup)."""
        subprocess.run(self._tmux("send-keys", "-t", self.name, "-l", *keys), check=True)

    def screen(self) -> str:
        out = subprocess.run(
            self._tmux("capture-pane", "-p", "-t", self.name),
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout

    def wait_for(
        self, ready: Callable[[str], bool], what: str, *, seconds: float = DEADLINE
    ) -> str:
        """Poll the pane until `ready(screen)`, up to `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            screen = self.screen()
            if ready(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} never showed; the screen was:\n{screen}")
            time.sleep(0.1)  # a poll interval, not a wait for something in particular

    def kill(self) -> None:
        subprocess.run(self._tmux("kill-server"), check=False)


def read_until(fd: int, wanted: str, timeout: float) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    while wanted not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {wanted!r} on the terminal; it showed:\n{seen}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            seen += os.read(fd, 4096).decode(errors="replace")
    return seen


EXE = str(Path(sys.executable).with_name("rmq-console"))


def console_env(sandbox: Sandbox, tmp_path: Path, ws: Path) -> dict[str, str]:
    config = tmp_path / "config.yaml"
    cluster = {"name": "sandbox", "namesrv": [sandbox.namesrv_addr]}
    config.write_text(yaml.safe_dump({"clusters": [cluster], "workspace": str(ws)}))
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "RMQ_CONSOLE_CONFIG": str(config),
        "TERM": "xterm",
    }


def own_terminal() -> None:
    """In the child: a session of its own whose controlling terminal is the pty, so ctrl-c
    typed there is a SIGINT to it, as at an operator's terminal."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)

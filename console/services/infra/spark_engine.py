"""Which Spark a command plans on: a warm Spark Connect server when there is one, else a session
of its own.

In order: `--master` given on the command line; `spark_master: sc://…` in the config; a server
started by `rmq-console spark up` that is still running; the config's `spark_master`
(`local[*]` or `spark://…`, started by the command and gone when it ends). A Connect server
that does not accept connections is an error, unless the caller asked to fall back to a local
session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from console.errors import UserError
from console.services.infra.connect_server import (
    CLIENT_HOST,
    LOOPBACK,
    ServerHome,
    ServerRecord,
    accepts,
    connect_address,
    public_url,
    running,
)

LOCAL_MASTER = "local[*]"


class EngineUnavailable(UserError):
    """The Spark Connect server to use does not answer; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Engine:
    master: str
    #: Where the choice came from: "--master", "config", "spark up" or "local fallback".
    source: str
    #: Environment the job host needs (the token of a server started by `spark up`).
    env: Mapping[str, str] = field(default_factory=dict)
    #: Something the operator should be told (a fallback), or None.
    note: str | None = None

    @property
    def is_connect(self) -> bool:
        return self.master.startswith("sc://")


def listening(url: str) -> bool:
    host, port = connect_address(url)
    return accepts(host, port)


def choose_engine(
    explicit: str | None,
    configured: str,
    *,
    home: ServerHome | None = None,
    local_fallback: bool = False,
    answers: Callable[[str], bool] = listening,
) -> Engine:
    """The engine for one command (see the module's docstring for the order)."""
    started = running(home or ServerHome.default())
    if explicit:
        return _reachable(_ours(Engine(explicit, "--master"), started), local_fallback, answers)
    if configured.startswith("sc://"):
        return _reachable(_ours(Engine(configured, "config"), started), local_fallback, answers)
    if started is not None and answers(started.url):
        return engine_of(started)
    return Engine(configured, "config")


def engine_of(record: ServerRecord) -> Engine:
    return Engine(record.url, "spark up", env=record.client_env)


def _ours(engine: Engine, started: ServerRecord | None) -> Engine:
    """A URL naming the server `spark up` started gets in with its token (and by the name the
    pyspark client sends a token to without TLS)."""
    if started is None or not engine.is_connect:
        return engine
    try:
        host, port = connect_address(engine.master)
    except ValueError:
        return engine
    if port == started.port and host in (CLIENT_HOST, LOOPBACK):
        return Engine(started.url, engine.source, env=started.client_env)
    return engine


def _reachable(engine: Engine, local_fallback: bool, answers: Callable[[str], bool]) -> Engine:
    if not engine.is_connect or answers(engine.master):
        return engine
    named_by = "--master" if engine.source == "--master" else "spark_master"
    where = f"{public_url(engine.master)} ({named_by})"
    if local_fallback:
        return Engine(
            LOCAL_MASTER,
            "local fallback",
            note=f"the Spark Connect server {where} does not answer: planning on a local "
            "Spark session instead",
        )
    raise EngineUnavailable(
        f"the Spark Connect server {where} does not answer: start it (rmq-console spark up, "
        "or on its host), or pass --local-fallback to plan on a local Spark session"
    )

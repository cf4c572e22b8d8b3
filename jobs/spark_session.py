"""The one place a SparkSession is built, for the console's warm host, spark-submit and tests."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

# Plans are tiny next to what Spark is sized for: a few partitions keep small jobs fast, and
# the UTC session zone keeps epoch-ms arithmetic and any timestamp rendering machine-independent.
DEFAULT_CONF: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
}
APP_NAME = "rmq-console"


def is_connect(master: str) -> bool:
    return master.startswith("sc://")


def build_session(
    master: str | None = "local[*]",
    *,
    app_name: str = APP_NAME,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A session on `master` (`local[*]`, `spark://host:7077`, `yarn`, …) or a Spark Connect
    server (`sc://host:15002`); None leaves the master to spark-submit. `conf` overrides the
    defaults."""
    settings = {**DEFAULT_CONF, **(conf or {})}
    builder = SparkSession.builder.appName(app_name)
    if master is not None and is_connect(master):
        builder = builder.remote(master)
        # A Connect server owns its cluster settings; only session-level SQL options apply.
        settings = {k: v for k, v in settings.items() if k.startswith("spark.sql.")}
    elif master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()

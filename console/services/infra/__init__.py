"""What every capability stands on: the one admin-client factory and the one write rule
(`access`), the workspace and its files (`workspace`, `files`, `journal_store`, `export`),
bounded fan-out (`fanout`), and Spark: the host process the console plans on (`spark_runner`,
its jobs' states and errors in `spark_jobs`), the Connect server (`connect_server`,
`spark_engine`), and the RPC they speak (`rpc`)."""

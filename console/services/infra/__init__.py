"""What every capability stands on: the one admin-client factory and write rule (`access`), the
workspace and its files (`workspace`, `files`, `journal_store`, `export`), bounded fan-out
(`fanout`), and the Spark engine: the Spark host process (`spark_runner`), the Connect server
(`connect_server`, `spark_engine`) and the RPC both speak (`rpc`)."""

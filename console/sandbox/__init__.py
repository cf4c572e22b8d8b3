"""A real local RocketMQ 5.3.3 cluster (one name server, two brokers) with a seeded scenario.

Used by the demo (`rmq-console demo`, `rmq-console sandbox up`) and by the integration tests.

Entry points:
- `runner.sandbox(SandboxOptions)`: async context manager, everything up and always down;
- `background.BackgroundSandbox`: the same on its own thread, for synchronous callers;
- `acl.acl_sandbox(AclOptions)` / `background.BackgroundAclSandbox`: a separate cluster (name
  server + one broker) with ACL 2.0 authentication on, seeded through the signed client;
- `cli.add_arguments` / `cli.run`: `sandbox fetch|up|down|status`;
- `jars.fetch_jars`: the jars alone; `mqadmin.Mqadmin`: the official tools as an oracle;
- `scenario`: the topic and group names the seed creates, and what each demonstrates.
"""

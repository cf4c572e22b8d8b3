"""rmq-console: a terminal operations console for Apache RocketMQ consumer offsets.

The layout, one line per package (each layer imports only those below it; README, "Layout"):

- `cli`: the command line, rendering the services' sessions in a terminal;
- `ui`: the Textual console, which calls services in workers and gets messages back;
- `remote`: the console's network process, and the proxy the UI reads a cluster through;
- `services`: headless logic, one package per capability: `walkthrough` on `apply` on `plan` on
  `read` on `infra`;
- `config`: the config file, typed; `domain`: values and pure rules, no I/O;
- `rocketmq`: the async remoting client; `errors`, `json_text`, `lined_yaml`, `locations`,
  `processes`, `redact`: what every layer may use;
- `sandbox`: the local RocketMQ sandbox (only its command imports it).
"""

__version__ = "0.1.0"

"""The evidence a walkthrough shows, by name: what the cluster says that bears on the step.

Each provider reads the cluster (never writes) and returns an `Evidence`: lines for the screen
and the report, values a spec template or a later step may use, and what could not be read —
a broker that did not answer leaves its queues unknown, never counted as fine.

Walkthrough files name these providers (`evidence: [group, clients]`); `EVIDENCE` is the list
a file is checked against.

One module per provider (`group`, `clients`, ...: the evidence's name with `_` for `-`), each
with its `provide`; `registry` holds them by name and `gather` runs them; `titles` names them
(what a walkthrough file is checked against, without loading a provider); `answers` checks the
answers that need the cluster; `context` is what they all read through.
"""

"""Headless logic the CLI and the console share (no Textual), one package per capability.

The packages stand on each other one way, as the folder reads from the bottom up (an
import-linter contract in pyproject.toml keeps it so):

- `walkthrough/`: guided resets, their evidence and reports; drives plan and apply;
- `apply/`: the one write path: the apply session, its checks, the writers, undo and resume;
- `plan/`: planning a reset on Spark, and loading a plan an apply takes;
- `read/`: reading a cluster: brokers, topics, groups' offsets, snapshots, the lag history;
- `infra/`: what every capability stands on: the admin-client factory, the workspace and its
  files, journals, bounded fan-out, the Spark engine and the child-process RPC.
"""

"""Guided reset walkthroughs: a run and its answers (`runner`), the walkthrough files
(`catalog`), the evidence providers (`evidence`, one module each, with a registry), the
console's reads (`reads`), and the report written after (`report`)."""

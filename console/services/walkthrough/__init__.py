"""Guided reset walkthroughs: a run and its answers (`runner`), the evidence providers
(`evidence`), the console's reads (`reads`), and the report written after (`report`)."""

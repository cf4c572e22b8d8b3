"""Errors the sandbox raises. Each says what went wrong and what to do about it."""

from __future__ import annotations


class SandboxError(Exception):
    """Base of every sandbox failure."""


class MissingToolError(SandboxError):
    """A program the sandbox needs (java, javac, mvn) is not installed."""

    def __init__(self, missing: list[str], hint: str) -> None:
        names = ", ".join(missing)
        super().__init__(f"the RocketMQ sandbox needs {names}, not found on PATH. {hint}")
        self.missing = missing


class FetchError(SandboxError):
    """Maven could not fetch the RocketMQ jars."""


class BuildError(SandboxError):
    """javac could not compile the sandbox's Java consumer."""


class StartupError(SandboxError):
    """A sandbox process died or did not become ready in time; the message holds its log tail."""


class SeedError(SandboxError):
    """The scenario could not be seeded as described."""


class MqadminError(SandboxError):
    """The official mqadmin failed or printed something the parser does not recognise."""

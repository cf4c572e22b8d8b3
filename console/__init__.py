"""rmq-console: a terminal operations console for Apache RocketMQ consumer offsets."""

__version__ = "0.1.0"

import sys

from console.cli import run

sys.exit(run())

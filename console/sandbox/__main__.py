"""`python -m console.sandbox fetch|up|down|status`: the sandbox without the console's CLI."""

from __future__ import annotations

import argparse
import sys

from console.sandbox.cli import add_arguments, run

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m console.sandbox", description=__doc__)
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))

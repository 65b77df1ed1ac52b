"""``python -m sleuth.scripted --scenario FILE --port N``."""

from __future__ import annotations

import argparse
import sys

from sleuth.scripted.cli import add_arguments, run

parser = argparse.ArgumentParser(prog="python -m sleuth.scripted")
add_arguments(parser)
sys.exit(run(parser.parse_args()))

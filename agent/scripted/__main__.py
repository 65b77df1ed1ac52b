"""``python -m sleuth.agent.scripted --scenario FILE --port N``."""

from __future__ import annotations

import argparse
import sys

from sleuth.agent.scripted.cli import add_arguments, run

parser = argparse.ArgumentParser(prog="python -m sleuth.agent.scripted")
add_arguments(parser)
sys.exit(run(parser.parse_args()))

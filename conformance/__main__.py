"""`python -m conformance run ...`: the same commands as `ktir conformance ...`."""

import argparse
import sys

from conformance.cli import add_conformance_parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance", description="The KTIR conformance suite.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_conformance_parser(sub)
    try:
        args = parser.parse_args(["conformance", *(sys.argv[1:] if argv is None else argv)])
    except SystemExit as e:
        return int(e.code or 0)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())

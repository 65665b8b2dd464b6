"""`ktir lower sdsc PATH [-o OUT]`, `ktir lower torch FILE.pt2 -o OUT.ktir` and
`ktir run-program OUT.manifest.json`: the command-line side of ktir.lower.

Wire it into ktir/cli.py's build_parser() with

    from ktir.lower.cli import add_lower_parser
    add_lower_parser(sub)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def add_lower_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `lower` (with its `sdsc` source) to the `ktir` command's subparsers."""
    lower = subparsers.add_parser(
        "lower",
        help="lower another representation to KTIR",
        description="Lower another representation to KTIR.",
    )
    sources = lower.add_subparsers(dest="source", required=True, metavar="SOURCE")
    sdsc = sources.add_parser(
        "sdsc",
        help="an SDSC (SuperDSC) JSON file or bundle directory from torch-spyre",
        description=(
            "Lower one SDSC JSON file, or a bundle (a directory with bundle.mlir and the sdsc_*.json files it runs), "
            "to canonical KTIR. Every core's start address is recomputed from the layout and checked. Exit 0 on "
            "success, 1 when the input cannot be lowered, 2 on usage or I/O errors."
        ),
    )
    sdsc.add_argument("path", metavar="PATH", help="an sdsc.json file, or a bundle directory (or its bundle.mlir)")
    sdsc.add_argument("-o", "--output", metavar="OUT", help="write the KTIR here (atomically) instead of stdout")
    sdsc.add_argument(
        "--skip-missing",
        action="store_true",
        help="lower a bundle whose SDSC files are not all present, leaving the missing steps out",
    )
    sdsc.add_argument("-v", "--verbose", action="store_true", help="report the address checks and the entry's arguments")
    sdsc.set_defaults(run=cmd_lower_sdsc)
    # the PyTorch side imports torch only when it runs
    from ktir.lower.torch.program_cli import add_run_program_parser, add_torch_parser

    add_torch_parser(sources)
    add_run_program_parser(subparsers)
    return lower  # type: ignore[no-any-return]


def cmd_lower_sdsc(args: argparse.Namespace) -> int:
    from ktir.fileio import write_atomic
    from ktir.lower import SdscError, lower_path

    try:
        lowered = lower_path(args.path, skip_missing=args.skip_missing)
    except SdscError as e:
        print(e.with_file(args.path).render(), file=sys.stderr)
        return EXIT_INVALID
    except AssertionError as e:  # the verifier rejected our own output: a bug, reported plainly
        print(f"{args.path}: error[internal]: {e}", file=sys.stderr)
        return EXIT_INVALID
    except FileNotFoundError:
        print(f"ktir lower: cannot read {args.path}: no such file or directory", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print(f"ktir lower: cannot read {e.filename or args.path}: {e.strerror}", file=sys.stderr)
        return EXIT_USAGE
    for missing in lowered.skipped:
        print(f"{args.path}: warning[sdsc]: {missing} is not present; its steps are left out", file=sys.stderr)
    if args.verbose:
        for kernel in lowered.kernels:
            for check in lowered.checks.get(kernel.name, []):
                print(f"{kernel.source}: note[sdsc]: {check}", file=sys.stderr)
        print(f"entry @{lowered.entry}:", file=sys.stderr)
        for arg in lowered.args:
            print(f"  {arg.describe()}", file=sys.stderr)
    if args.output in (None, "-"):
        sys.stdout.write(lowered.text)
        return EXIT_OK
    try:
        write_atomic(args.output, lowered.text)
    except OSError as e:
        print(f"ktir lower: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m ktir.lower.cli sdsc PATH ...` (the same as `ktir lower sdsc PATH ...`)."""
    parser = argparse.ArgumentParser(prog="ktir lower")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_lower_parser(sub)
    try:
        args = parser.parse_args(["lower", *(argv if argv is not None else sys.argv[1:])])
    except SystemExit as e:
        return int(e.code or 0)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())

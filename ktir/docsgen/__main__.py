"""`python -m ktir.docsgen --out DIR`: write the generated spec pages as Markdown files."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ktir.docsgen.pages import generate


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ktir.docsgen", description=__doc__)
    parser.add_argument("--spec", type=Path, default=Path("spec"), help="the spec/ directory (default: ./spec)")
    parser.add_argument("--out", type=Path, required=True, help="directory to write the pages into")
    args = parser.parse_args(argv)
    if not (args.spec / "ops").is_dir():
        print(f"{args.spec}: not a spec directory (no ops/ inside)", file=sys.stderr)
        return 2
    pages = generate(args.spec)
    for uri, text in pages.items():
        path = args.out / uri
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(pages)} pages to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

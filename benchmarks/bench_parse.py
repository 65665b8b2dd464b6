"""Parse and parse+print throughput: a cold single file, a generated 20,000-line module, the repository's files.

First, the cold single-file figure: what `ktir validate FILE` pays to read one kernel.
Each of --cold-runs fresh processes imports the parser and parses --file (default
examples/softmax.ktir) once; the best CPU time of the import and of that first parse are
shown, and a second parse of the same text in the same process (the parse alone, once
the code it needs is loaded). Every parse is cold in the other sense too: a parse keeps
nothing for the next one (no process-wide tables, tests/syntax/test_fastparse_shared.py).

Then lines/second for each job below, and ratios against baselines measured in the same run:

- `baseline regex tokenise`: tokenising the same text with one compiled regex
  (`re.findall`), the floor any Python parser of this text pays;
- `upstream-style parse`: benchmarks/upstream_style.py, a parser that does the work the
  regex parser of the upstream Python interpreter (torch-spyre/ktir-cpu,
  `ktir_cpu/parser.py`) does: alias pre-scan, brace-walking function extraction, line
  joining with brace counting, region detection, per-op regex dispatch, attribute blocks,
  shaped types and affine maps/sets parsed into objects (its docstring lists what it
  reproduces and what it leaves out). It finds the same ops as `ktir.parse` on the
  generated modules (checked below). This is the baseline the issue's "upstream-style
  regex parse" means;
- `minimal regex parse (lighter than upstream)`: one regex per op line for results,
  name, operands, attributes and types, kept as strings in a dict per op; no line
  joining, regions, per-dialect parsing or type objects. A floor for any regex reader.

`parse` is what `ktir.parse` does: the production parser (ktir/syntax/fastparse.py),
on a module whose ops repeat 10 line forms. `parse, no line repeats` reads a module of
the same size and forms with every number and shape varied (its lines are a little
longer, and every type is new: types are parsed once per distinct text). `parse, grammar only` runs the normative LALR grammar alone (the tests'
oracle; `parse` runs it only to report the error in a text it rejects). Each figure is
the best of --repeat runs, interleaved, in wall-clock seconds and, in brackets, CPU
seconds of this process (steadier on a loaded machine). A job's result is freed after
its clock stops, for every job alike.

The fast path keeps what it has read (types, affine maps/sets) for the parse
of one text only: every parse here is cold, as a separate process would run it, and
reading many files in one process shares nothing between them.

The corpus rows parse every .ktir/.mlir file of the repository that the grammar accepts
(examples/, conformance cases, test data; found as tests/syntax/test_fastparse_equivalence.py
finds them) one after the other, with `ktir.parse` and with the upstream-style parser
(files it rejects are timed up to its error and counted), and say how many valid files
the production parser leaves to the grammar (none, tests/syntax/test_fastparse_equivalence.py). This is the kind of text users have, read as
`ktir validate DIR` or the conformance runner reads it.

Run: `python benchmarks/bench_parse.py [--lines N] [--repeat N] [--file F] [--cold-runs N]`.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import ktir
from ktir.ir.operation import Module
from ktir.syntax import parser as p
from ktir.syntax.diagnostics import KtirError
from ktir.syntax.parser import parse

sys.path.insert(0, str(Path(__file__).resolve().parent))
import upstream_style  # noqa: E402

_BODY = [
    "%v{i} = ktdp.construct_memory_view %a, sizes: [256, 64], strides: [64, 1] {{coordinate_set = #set, memory_space = #ktdp.memory_space<global>}} : memref<256x64xf16>",
    "%t{i} = ktdp.construct_access_tile %v{i}[%id * 8 + %c0, %c0] {{access_tile_order = #id2, access_tile_set = #tile}} : memref<256x64xf16> -> !ktdp.access_tile<8x64xindex>",
    "%x{i} = ktdp.load %t{i} : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>",
    "%y{i} = arith.addf %x{i}, %x{i} : tensor<8x64xf16>",
    "%z{i} = math.exp %y{i} : tensor<8x64xf16>",
    "%e{i} = tensor.empty() : tensor<8x64xf16>",
    "%m{i} = linalg.mul ins(%z{i}, %x{i} : tensor<8x64xf16>, tensor<8x64xf16>) outs(%e{i} : tensor<8x64xf16>) -> tensor<8x64xf16>",
    "%k{i} = arith.constant 4 : index",
    "%p{i} = arith.cmpi slt, %k{i}, %id : index",
    "ktdp.store %m{i}, %t{i} : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>",
]


# The same body with every number and shape taken from the repetition's index: no op line
# repeats another's tokens (SSA names aside), so `parse` cannot copy an op it has read.
_DISTINCT_BODY = [
    "%v{i} = ktdp.construct_memory_view %a, sizes: [256, {w}], strides: [{w}, 1] {{coordinate_set = #set, memory_space = #ktdp.memory_space<global>}} : memref<256x{w}xf16>",
    "%t{i} = ktdp.construct_access_tile %v{i}[%id * {i} + %c0, %c0] {{access_tile_order = #id2, access_tile_set = #tile}} : memref<256x{w}xf16> -> !ktdp.access_tile<8x{w}xindex>",
    "%x{i} = ktdp.load %t{i} : !ktdp.access_tile<8x{w}xindex> -> tensor<8x{w}xf16>",
    "%y{i} = arith.addf %x{i}, %x{i} : tensor<8x{w}xf16>",
    "%z{i} = math.exp %y{i} : tensor<8x{w}xf16>",
    "%e{i} = tensor.empty() : tensor<8x{w}xf16>",
    "%m{i} = linalg.mul ins(%z{i}, %x{i} : tensor<8x{w}xf16>, tensor<8x{w}xf16>) outs(%e{i} : tensor<8x{w}xf16>) -> tensor<8x{w}xf16>",
    "%k{i} = arith.constant {i} : index",
    "%p{i} = arith.cmpi slt, %k{i}, %c{i} : index",
    "ktdp.store %m{i}, %t{i} {{n = {i} : i64}} : tensor<8x{w}xf16>, !ktdp.access_tile<8x{w}xindex>",
]


def generate(lines: int, distinct: bool = False) -> str:
    body = _DISTINCT_BODY if distinct else _BODY
    out = [
        "#set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 63 >= 0)>",
        "#tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>",
        "#id2 = affine_map<(d0, d1) -> (d0, d1)>",
        "func.func @big(%a: index) attributes {grid = [32]} {",
        "  %id = ktdp.get_compute_tile_id : index",
        "  %c0 = arith.constant 0 : index",
    ]
    i = 0
    while len(out) < lines - 2:
        for template in body:
            out.append("  " + template.format(i=i, w=64 + i))
        i += 1
    out += ["  func.return", "}"]
    return "\n".join(out) + "\n"


_OP_LINE = re.compile(r"\s*(?:(%[^=]*?)\s*=\s*)?([A-Za-z_][\w.]*)\s*(.*?)\s*(?::\s*([^:{}]*))?$")
_SSA = re.compile(r"%[\w$.#-]+")
_ATTRS = re.compile(r"\{([^{}]*)\}")
_TYPE_SPLIT = re.compile(r",\s*(?![^<>]*>)")


def minimal_regex_parse(text: str) -> list[dict[str, object]]:
    """One dict per op line, its pieces as strings (lighter than upstream: see the module docstring)."""
    ops: list[dict[str, object]] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped or stripped[0] in "#}/":
            continue
        m = _OP_LINE.match(stripped)
        if m is None:
            continue
        results, name, body, types = m.groups()
        attrs = {}
        block = _ATTRS.search(body)
        if block is not None:
            for entry in block.group(1).split(","):
                key, _, value = entry.partition("=")
                attrs[key.strip()] = value.strip()
        ops.append(
            {
                "name": name,
                "results": _SSA.findall(results or ""),
                "operands": _SSA.findall(body if block is None else body[: block.start()]),
                "attributes": attrs,
                "types": _TYPE_SPLIT.split(types) if types else [],
            }
        )
    return ops


def best_of(jobs: dict[str, Callable[[], object]], repeat: int) -> dict[str, tuple[float, float]]:
    """label -> (best wall seconds, best CPU seconds), the jobs run interleaved."""
    wall: dict[str, list[float]] = {label: [] for label in jobs}
    cpu: dict[str, list[float]] = {label: [] for label in jobs}
    for _ in range(repeat):
        for label, fn in jobs.items():
            w, c = time.perf_counter(), time.process_time()
            result = fn()
            wall[label].append(time.perf_counter() - w)
            cpu[label].append(time.process_time() - c)
            # freeing the result is not part of the job: drop it outside the timed region
            # (a 20,000-op module takes a tenth of its parse time to free)
            del result
    return {label: (min(wall[label]), min(cpu[label])) for label in jobs}


def corpus_files() -> list[Path]:
    """Every .ktir/.mlir file of the repository the grammar accepts, as the equivalence test finds them."""
    root = Path(__file__).resolve().parents[1]
    skip = {"site", "build", "node_modules", "ci-artifacts"}
    found = []
    for ext in ("*.ktir", "*.mlir"):
        for f in root.rglob(ext):
            parts = f.relative_to(root).parts
            if skip.intersection(parts) or any(x.startswith(".") for x in parts):
                continue
            try:
                parse(f.read_text(encoding="utf-8"), fast=False)
            except KtirError:
                continue
            found.append(f)
    return sorted(found)


def ktir_ops(module: Module) -> int:
    """Ops written in the text (not the implicit terminators and short-form bodies the AST spells out)."""
    return sum(1 for op in module.walk() if op.loc is not None and op.name not in ("func.func", "builtin.module"))


def upstream_all(texts: list[str]) -> int:
    """Parse each text upstream-style; the number of texts it rejects."""
    rejected = 0
    for text in texts:
        try:
            upstream_style.parse(text)
        except (ValueError, IndexError):
            rejected += 1
    return rejected


def row(label: str, lines: int, wall: float, cpu: float, extra: str = "") -> None:
    print(f"{label:46}{lines / wall:10,.0f} [{lines / cpu:10,.0f}]{extra}")


_COLD = """
import sys, time
c = time.process_time()
from ktir.syntax.parser import parse
imported = time.process_time() - c
text = open(sys.argv[1], encoding="utf-8").read()
c = time.process_time()
parse(text, sys.argv[1])
first = time.process_time() - c
c = time.process_time()
parse(text, sys.argv[1])
print(imported, first, time.process_time() - c)
"""


def cold_single_file(path: Path, runs: int) -> tuple[float, float, float]:
    """Best CPU seconds over `runs` fresh processes: importing the parser, its first parse
    of `path`, and a second parse of it in the same process."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    best = [float("inf")] * 3
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _COLD, str(path)], capture_output=True, text=True, check=True, cwd=root)
        best = [min(b, float(x)) for b, x in zip(best, out.stdout.split(), strict=True)]
    return best[0], best[1], best[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--file", type=Path, default=Path(__file__).resolve().parents[1] / "examples" / "softmax.ktir")
    ap.add_argument("--cold-runs", type=int, default=5)
    args = ap.parse_args()
    imported, first, again = cold_single_file(args.file, args.cold_runs)
    lines_in_file = args.file.read_text(encoding="utf-8").count("\n")
    print(
        f"cold single file {args.file.name} ({lines_in_file} lines), best of {args.cold_runs} fresh processes, CPU: "
        f"import {imported * 1e3:.1f} ms + first parse {first * 1e3:.1f} ms = {(imported + first) * 1e3:.1f} ms; "
        f"a second parse {again * 1e3:.2f} ms"
    )
    print()
    text = generate(args.lines)
    distinct = generate(args.lines, distinct=True)
    n = text.count("\n")
    ktir.parse("func.func @warm() { return }")  # load the parser tables once
    tokens = re.compile(r"%[\w$.#-]+|[A-Za-z_][\w$.]*|[0-9]+|->|\S")
    module = ktir.parse(text)
    assert module == parse(text, fast=False), "the two parse paths disagree"
    assert ktir.parse(distinct) == parse(distinct, fast=False), "the two parse paths disagree"
    for t in (text, distinct):  # the baseline does the whole job: it finds every op
        assert upstream_style.parse(t).count_ops() == ktir_ops(ktir.parse(t)), "upstream-style parse misses ops"
    jobs: dict[str, Callable[[], object]] = {
        "baseline regex tokenise": lambda: tokens.findall(text),
        "upstream-style parse": lambda: upstream_style.parse(text),
        "upstream-style parse, no line repeats": lambda: upstream_style.parse(distinct),
        "minimal regex parse (lighter than upstream)": lambda: minimal_regex_parse(text),
        "parse": lambda: ktir.parse(text),
        "parse, no line repeats": lambda: ktir.parse(distinct),
        "parse, grammar only": lambda: parse(text, fast=False),
        "print": lambda: ktir.print_module(module),
    }
    best = best_of(jobs, args.repeat)
    best["parse + print"] = (best["parse"][0] + best["print"][0], best["parse"][1] + best["print"][1])
    base_wall, base_cpu = best["baseline regex tokenise"]
    up_wall, up_cpu = best["upstream-style parse"]
    min_wall, min_cpu = best["minimal regex parse (lighter than upstream)"]
    print(f"module: {n} lines, {len(text)} bytes; best of {args.repeat}, wall-clock [CPU]")
    print(
        f"{'':46}{'lines/s':>10} {'[CPU]':>12}  {'time / tokenise':>16}  {'speed / upstream-style':>22}  {'speed / minimal regex':>21}"
    )
    for label, (wall, cpu) in best.items():
        extra = ""
        if label != "print":
            extra = f"  {wall / base_wall:6.1f}x [{cpu / base_cpu:5.1f}x]  {up_wall / wall:10.2f}x [{up_cpu / cpu:5.2f}x]  {min_wall / wall:9.2f}x [{min_cpu / cpu:5.2f}x]"
        if label == "parse, no line repeats":  # against the baseline reading the same text
            uw, uc = best["upstream-style parse, no line repeats"]
            extra += f"   (same text upstream-style: {uw / wall:.2f}x [{uc / cpu:.2f}x])"
        row(label, n, wall, cpu, extra)

    files = corpus_files()
    texts = [f.read_text(encoding="utf-8") for f in files]
    lines = sum(t.count("\n") for t in texts)
    fallbacks = [f for f, t in zip(files, texts, strict=True) if p._parse_fast(t, p._Builder()) is None]
    rejected = upstream_all(texts)
    ops = sum(ktir_ops(ktir.parse(t)) for t in texts)
    up_ops = 0
    for t in texts:
        with contextlib.suppress(ValueError, IndexError):
            up_ops += upstream_style.parse(t).count_ops()
    both = [t for t in texts if upstream_all([t]) == 0]  # the files upstream-style also reads
    both_lines = sum(t.count("\n") for t in both)
    corpus = best_of(
        {
            "corpus: upstream-style parse": lambda: upstream_all(texts),
            "corpus: parse": lambda: [ktir.parse(t) for t in texts],
            "corpus: parse, grammar only": lambda: [parse(t, fast=False) for t in texts],
            "files both read: upstream-style parse": lambda: upstream_all(both),
            "files both read: parse": lambda: [ktir.parse(t) for t in both],
        },
        args.repeat,
    )
    print()
    print(
        f"corpus: {len(files)} files the grammar accepts, {lines} lines, {ops} ops; {len(fallbacks)} valid files left to the grammar"
    )
    print(
        f"  upstream-style: rejects {rejected} files; finds {up_ops} ops in the others (the ops it misses are in forms upstream does not split right)"
    )
    for label, (wall, cpu) in corpus.items():
        subset = label.split(":")[0]
        base_wall, base_cpu = corpus[f"{subset}: upstream-style parse"]
        count = both_lines if subset == "files both read" else lines
        row(label, count, wall, cpu, f"  {base_wall / wall:10.2f}x [{base_cpu / cpu:5.2f}x] speed / upstream-style")
    print(f"  (files both read: the {len(both)} files upstream-style does not reject, {both_lines} lines)")


if __name__ == "__main__":
    main()

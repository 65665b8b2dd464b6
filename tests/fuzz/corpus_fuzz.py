"""The fuzzing lane for the KTIR tools (issues 18 and 33).

Five generators, each input a pure function of (seed, index):

- `corpus`: a program of the repository's own corpus (`*.ktir`/`*.mlir`) with one to three
  mutations: byte flips, token deletions, duplications and swaps, splices of lines from
  another file, truncation, and integer, shape and type mutations;
- `grammar`: a random derivation of the grammar itself, `ktir/syntax/ktir.lark`
  (grammar_gen.py: every rule, the generic form and every attribute kind, with depth, size
  and number-size knobs);
- `limits`: programs at and past every bound of ktir.syntax.limits (nesting of each kind,
  literal digits, ranks, integer widths, view strides) and the printer/parser corner cases
  (limits_gen.py);
- `readers`: bad files for every other reader: SDSC bundles, conformance capability,
  waiver, results and suite files, program manifests, target descriptions, `.npy`
  arguments (readers_gen.py);
- `cli`: every `ktir` subcommand with its flags and values fuzzed: numbers, paths,
  encodings (cli_gen.py).

A program (the first three) goes through parse -> verify -> print -> re-parse -> print, the
same in MLIR's generic form, the grammar-only parser against the fast path, and, for a
kernel that verifies clean and has small shapes, the reference interpreter. A command line
(the last two) runs `ktir` in-process in a fresh folder (cli_case.py). A failure is

- an exception other than a located `KtirError` (parse/verify) or `KtirRuntimeError`
  (interpreter), or a traceback printed by a command: `exception`;
- a parse error without a location (line 0): `unlocated`;
- an internal error (`runtime.internal`) where a located user error was due: `internal`;
- printed text that the parser rejects: `roundtrip-reject`;
- a re-parsed module that differs from the first, or a second print that differs from
  the first (custom or generic form): `roundtrip-unstable`;
- the fast parser and the grammar disagreeing on a text: `parser-disagree`;
- a command that exits non-zero without a word: `silent`;
- more than `--time-limit` seconds of CPU time (default 5) on one input: `hang` (CPU time, so a
  loaded machine does not turn slow inputs into hangs);
- more than `--memory-limit` bytes (default 2 GiB) of address space: `memory`.

They run in worker processes at Python's default recursion limit (what a user's process
has): a worker stuck in C code past the time limit is killed by the parent, which records
the input and starts a new worker. Failing inputs are written to `--save DIR` as
`<kind>-<hash>.ktir` (a program) or a folder `<kind>-<hash>/` (files and `command.txt`).

    python tests/fuzz/corpus_fuzz.py --inputs 200000 --seed 1 --jobs 2 --save fuzz-failures
    python tests/fuzz/corpus_fuzz.py --generators corpus --inputs 20000   # the issue-18 lane alone

(`python -m tests.fuzz.corpus_fuzz ...` from the repository root works too.) CI runs a
20,000-input sample with a fixed seed; tests/fuzz/test_fuzz_lane.py a short one.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import multiprocessing as mp
import os
import random
import re
import signal
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:  # the generators are modules beside this file
    sys.path.insert(0, _HERE)
if str(ROOT / "tests") not in sys.path:  # helpers shared with the tests (observable)
    sys.path.append(str(ROOT / "tests"))
if __name__ == "__main__" and str(ROOT) not in sys.path:
    # run as a script, sys.path starts with this folder: fuzz this checkout's code, not
    # whichever copy of the package is installed
    sys.path.insert(1, str(ROOT))
_SKIP = {"site", "build", "node_modules", "ci-artifacts", "fuzz-failures"}
MAX_SEED_BYTES = 6000  # larger files cost more per input and add little new syntax

# ---------------------------------------------------------------- corpus


def corpus_files(root: Path = ROOT) -> list[Path]:
    files = [p for ext in ("*.ktir", "*.mlir") for p in root.rglob(ext)]
    keep = []
    for p in files:
        parts = p.relative_to(root).parts
        if _SKIP.intersection(parts) or any(x.startswith(".") for x in parts):
            continue
        if p.stat().st_size <= MAX_SEED_BYTES:
            keep.append(p)
    return sorted(keep)


def load_corpus(root: Path = ROOT) -> list[str]:
    return [p.read_text(errors="replace") for p in corpus_files(root)]


# ---------------------------------------------------------------- mutations

_TOKEN = re.compile(
    r"""%[\w$.#-]+|\^[\w$.-]+|[#!@][\w$.-]+|"(?:[^"\\\n]|\\.)*"|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|[A-Za-z_][\w.$]*|\s+|."""
)
_INT = re.compile(r"(?<![\w%#^@!.])-?\d+(?![\w.])")
_SHAPE = re.compile(r"\b((?:(?:\d+|\?)x)+)(?=[a-z!])")
_TYPES = ["f16", "f32", "bf16", "f64", "i1", "i8", "i32", "i64", "index", "f8E4M3FN", "si32", "ui8", "none",
          "tensor<4xf32>", "memref<?xf16>", "!ktdp.access_tile<4xindex>", "vector<2xf32>", "complex<f32>"]
_TYPE_WORD = re.compile(r"\b(?:f16|f32|bf16|f64|i1|i8|i16|i32|i64|index)\b")
INTERESTING = [0, 1, -1, 2, 3, 7, 8, 64, 255, 256, 2**15, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, -(2**63),
               2**64, 10**21, -(2**31)]
_PUNCT = list("{}()[]<>,:=%#^@!\"*?-+x.;") + ["->", "::", "//", "\n", " ", "\\", "\t", "\x00", "\u00e9", "0x"]


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _flip(rng: random.Random, text: str, corpus: list[str]) -> str:
    if not text:
        return text
    i = rng.randrange(len(text))
    choice = rng.random()
    if choice < 0.5:
        c = rng.choice(_PUNCT)
    elif choice < 0.8:
        c = chr(rng.randrange(32, 127))
    else:
        c = chr(ord(text[i]) ^ (1 << rng.randrange(7))) if ord(text[i]) < 128 else "?"
    return text[:i] + c + text[i + 1 :]


def _insert(rng: random.Random, text: str, corpus: list[str]) -> str:
    i = rng.randrange(len(text) + 1)
    return text[:i] + rng.choice(_PUNCT) + text[i:]


def _delete_tokens(rng: random.Random, text: str, corpus: list[str]) -> str:
    toks = _tokens(text)
    if not toks:
        return text
    i = rng.randrange(len(toks))
    n = 1 if rng.random() < 0.7 else rng.randint(2, 8)
    del toks[i : i + n]
    return "".join(toks)


def _duplicate_tokens(rng: random.Random, text: str, corpus: list[str]) -> str:
    toks = _tokens(text)
    if not toks:
        return text
    i = rng.randrange(len(toks))
    n = 1 if rng.random() < 0.7 else rng.randint(2, 8)
    toks[i:i] = toks[i : i + n] * rng.choice((1, 1, 2, 30))
    return "".join(toks)


def _swap_tokens(rng: random.Random, text: str, corpus: list[str]) -> str:
    toks = [t for t in _tokens(text)]
    words = [i for i, t in enumerate(toks) if not t.isspace()]
    if len(words) < 2:
        return text
    a, b = rng.sample(words, 2)
    if rng.random() < 0.5:
        toks[a], toks[b] = toks[b], toks[a]
    else:
        toks[a] = toks[b]
    return "".join(toks)


def _truncate(rng: random.Random, text: str, corpus: list[str]) -> str:
    return text[: rng.randrange(len(text) + 1)]


def _lines(rng: random.Random, text: str, corpus: list[str]) -> str:
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    kind = rng.randrange(4)
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    elif kind == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    else:  # a line from another program
        other = rng.choice(corpus).split("\n")
        lines.insert(i, rng.choice(other))
    return "\n".join(lines)


def _integer(rng: random.Random, text: str, corpus: list[str]) -> str:
    spots = list(_INT.finditer(text))
    if not spots:
        return _flip(rng, text, corpus)
    m = rng.choice(spots)
    near = len(m.group()) < 100  # a neighbour of a short literal (int() refuses thousands of digits)
    value = int(m.group()) + rng.choice((-1, 1)) if near and rng.random() >= 0.7 else rng.choice(INTERESTING)
    return text[: m.start()] + str(value) + text[m.end() :]


def _shape(rng: random.Random, text: str, corpus: list[str]) -> str:
    spots = list(_SHAPE.finditer(text))
    if not spots:
        return _integer(rng, text, corpus)
    m = rng.choice(spots)
    dims = m.group(1)[:-1].split("x")
    kind = rng.randrange(5)
    i = rng.randrange(len(dims))
    if kind == 0:
        dims.insert(i, str(rng.choice((1, 2, 4, 16, 0))))
    elif kind == 1 and len(dims) > 1:
        del dims[i]
    elif kind == 2:
        dims[i] = "?"
    elif kind == 3:
        dims[i] = str(rng.choice(INTERESTING[:14]) if rng.random() < 0.5 else rng.randint(0, 9))
    else:
        dims = dims[::-1]
    return text[: m.start()] + "x".join(dims) + "x" + text[m.end() :]


def _type(rng: random.Random, text: str, corpus: list[str]) -> str:
    spots = list(_TYPE_WORD.finditer(text))
    if not spots:
        return _flip(rng, text, corpus)
    m = rng.choice(spots)
    return text[: m.start()] + rng.choice(_TYPES) + text[m.end() :]


MUTATORS = [
    (_flip, 3), (_insert, 1), (_delete_tokens, 3), (_duplicate_tokens, 2), (_swap_tokens, 2),
    (_truncate, 1), (_lines, 3), (_integer, 3), (_shape, 2), (_type, 2),
]
_MUTATOR_FNS = [f for f, w in MUTATORS for _ in range(w)]


def mutate_text(rng: random.Random, text: str, corpus: list[str] | None = None) -> str:
    """`text` with one to three of the mutations above."""
    corpus = corpus or [text]
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        text = rng.choice(_MUTATOR_FNS)(rng, text, corpus)
    return text


def generate(corpus: list[str], seed: int, index: int) -> str:
    """The corpus generator's input number `index` of the run with `seed`."""
    rng = random.Random(f"{seed}:{index}")
    return mutate_text(rng, rng.choice(corpus), corpus)


# ---------------------------------------------------------------- the mix of generators

# shares of the inputs (the command-line ones are slower per input)
MIX = {"corpus": 40, "grammar": 28, "limits": 14, "readers": 9, "cli": 9}
GENERATORS = tuple(MIX)


def generator_of(seed: int, index: int, mix: dict[str, int]) -> str:
    rng = random.Random(f"{seed}:{index}:generator")
    names = [n for n in mix if mix[n] > 0]
    return rng.choices(names, [mix[n] for n in names])[0]


def make_case(corpus: list[str], seed: int, index: int, mix: dict[str, int]) -> tuple[str, Any]:
    """(generator, input) number `index` of the run with `seed`: a program's text, or a
    CliCase (a pure function of the arguments)."""
    name = generator_of(seed, index, mix)
    if name == "corpus":
        return name, generate(corpus, seed, index)
    rng = random.Random(f"{seed}:{index}:{name}")
    if name == "grammar":
        from grammar_gen import generate_text

        return name, generate_text(rng)
    if name == "limits":
        from limits_gen import generate_limits

        return name, generate_limits(rng)
    if name == "readers":
        from readers_gen import generate_reader

        return name, generate_reader(rng)
    from cli_gen import generate_cli

    return name, generate_cli(rng)


# ---------------------------------------------------------------- one input


class Failure(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class _Timeout(BaseException):  # BaseException: code under test must not swallow it
    pass


# the interpreter runs only on kernels this small (elements per shaped type, tiles)
SMALL_ELEMENTS = 4096
SMALL_GRID = 16


def _small(module: Any) -> bool:
    from ktir.ir import types as ty

    for op in module.walk():
        for t in [*op.operand_types, *op.result_types]:
            shape = getattr(t, "shape", None)
            if shape is None:
                continue
            if isinstance(t, ty.AccessTileType):
                continue
            n = 1
            for d in shape:
                n *= d if d is not None else SMALL_ELEMENTS + 1
            if n > SMALL_ELEMENTS:
                return False
        grid = op.attributes.get("grid")
        if grid is not None:
            n = 1
            for g in getattr(grid, "elements", ()):
                n *= getattr(g, "value", SMALL_GRID + 1)
            if n > SMALL_GRID:
                return False
    return True


def _interpret(module: Any) -> str:
    import reference_interp
    from reference_interp.inputs import infer_args

    limits = {"step_limit": 20_000, "max_value_bytes": 1 << 22}  # small kernels need far less
    try:
        args = infer_args(module, None, {}, 0, limits)
        reference_interp.run(module, None, args, **limits)
    except reference_interp.KtirRuntimeError as e:
        if e.kind == "internal":
            raise Failure("internal", str(e.diagnostics[0].message)) from None
        return "runtime-error"
    return "ran"


def _round_trip(module: Any, form: str) -> None:
    """Print `module` in `form` (custom or generic), re-parse, compare, print again."""
    import ktir
    from ktir.syntax.diagnostics import KtirError
    from ktir.syntax.generic_printer import _inline_future_groups, print_generic

    if form == "custom":
        printer, expected = ktir.print_module, module
    else:
        # the generic form writes tile_future groups inline (stock MLIR cannot resolve the
        # alias there): it prints exactly this module
        printer, expected = (lambda m: print_generic(m, None)), _inline_future_groups(module)
    printed = printer(module)
    try:
        again = ktir.parse(printed, "printed.ktir")
    except KtirError as e:
        raise Failure("roundtrip-reject", f"{form}: {e}\n--- printed:\n{printed}") from None
    if again != expected:
        raise Failure("roundtrip-unstable", f"{form}: the re-parsed module differs\n--- printed:\n{printed}")
    if printer(again) != printed:
        raise Failure("roundtrip-unstable", f"{form}: the second print differs\n--- printed:\n{printed}")


def check(text: str, interpret: bool = True) -> str:
    """Run one input through the pipeline; return its outcome ('parse-error', 'invalid',
    'valid', 'ran', 'runtime-error') or raise Failure."""
    from observable import observable

    import ktir
    from ktir.syntax.diagnostics import KtirError
    from ktir.verify import verify

    try:
        module = ktir.parse(text, "fuzz.ktir")
    except KtirError as e:
        d = e.diagnostics[0] if e.diagnostics else None
        if d is not None and d.id == "syntax.internal":  # the grammar accepts what the production parser refused
            raise Failure("parser-disagree", d.message) from None
        if d is None or d.line < 1 or d.column < 1:
            raise Failure("unlocated", repr(d)) from None
        return "parse-error"
    try:  # the grammar alone must read what the fast path read, to the same module
        slow = ktir.parse(text, "fuzz.ktir", fast=False)
    except KtirError as e:
        raise Failure("parser-disagree", f"the fast path parsed it, the grammar says: {e}") from None
    if slow != module:
        a, b = repr(module), repr(slow)
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        raise Failure("parser-disagree", "the fast path and the grammar built different modules; at the first "
                      f"difference the fast path's has {a[max(0, at - 150):at + 150]!r}, the grammar's {b[max(0, at - 150):at + 150]!r}")
    seen_fast, seen_slow = observable(module), observable(slow)
    if seen_fast != seen_slow:  # same module, but locations, comments or warnings differ
        at = next((i for i, (x, y) in enumerate(zip(seen_fast, seen_slow, strict=False)) if x != y),
                  min(len(seen_fast), len(seen_slow)) - 1)
        raise Failure("parser-disagree", f"the fast path and the grammar read the same module differently: "
                      f"the fast path has {seen_fast[at]!r}, the grammar {seen_slow[at]!r}")
    diagnostics = verify(module, "fuzz.ktir")
    errors = [d for d in diagnostics if d.severity == "error"]
    _round_trip(module, "custom")
    _round_trip(module, "generic")
    if errors:
        return "invalid"
    if interpret and _small(module):
        return _interpret(module)
    return "valid"


def run_one(case: Any, interpret: bool = True) -> tuple[str, str]:
    """(outcome, detail) for one input (a program's text or a CliCase); outcome is a
    failure kind or a success outcome."""
    from cli_case import CliFailure

    try:
        if isinstance(case, str):
            return check(case, interpret), ""
        return "cli-" + check_cli_case(case), ""
    except (Failure, CliFailure) as f:
        return f.kind, f.detail
    except _Timeout:
        return "hang", "interrupted by the time limit"
    except MemoryError:
        return "memory", "MemoryError (address-space limit)"
    except RecursionError:
        return "exception", traceback.format_exc(limit=-8)
    except Exception:  # noqa: BLE001 - the point of the fuzzer: any other exception is a bug
        return "exception", traceback.format_exc(limit=-8)


def check_cli_case(case: Any) -> str:
    from cli_case import check_cli

    return check_cli(case)


# Failures whose fix belongs to another branch (named): counted as `known`, not as this
# lane's failures, until that branch is merged (then they no longer occur).
KNOWN_ELSEWHERE = [
    ("run --random-inputs negative (issue 28, helper upstream)",
     re.compile(r"reference_interp/inputs\.py(?:.*\n)*.*default_rng(?:.*\n)*.*expected non-negative integer")),
    ("grid of 10^12 tiles (issue 28, helper interp-speed)", re.compile(r"reference_interp/races\.py(?:.*\n)*MemoryError")),
]


def known_elsewhere(detail: str) -> str | None:
    for name, pattern in KNOWN_ELSEWHERE:
        if pattern.search(detail):
            return name
    return None


FAILURES = ("exception", "unlocated", "internal", "roundtrip-reject", "roundtrip-unstable", "parser-disagree", "silent",
            "hang", "memory", "memory-growth")


# ---------------------------------------------------------------- workers


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def _warm_up(mix: dict[str, int] | None = None) -> None:
    """Build the parser tables, import the pipeline and the generators before the first
    timed input (building the LALR tables takes seconds; a timer must not interrupt it)."""
    for text in ("func.func @f(%a: f32) -> f32 {\n  return %a : f32\n}\n", "func.func @f( {"):
        run_one(text)
    import reference_interp  # noqa: F401

    mix = mix or MIX
    if mix.get("grammar"):
        from grammar_gen import grammar

        grammar()
    if mix.get("readers") or mix.get("cli"):
        from cli_gen import commands

        commands()  # imports every subcommand's module
        import conformance.runner  # noqa: F401
        import schedulers.cli  # noqa: F401


def _worker(conn: Connection, current: Any, seed: int, time_limit: float, memory_limit: int, interpret: bool,
            mix: dict[str, int]) -> None:
    import faulthandler
    import resource

    # a worker killed by a signal in C code (a segfault) names its Python frames on stderr,
    # so the log of a long run shows where it died even when the input does not reproduce
    faulthandler.enable(file=sys.stderr, all_threads=False)
    if memory_limit > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    signal.signal(signal.SIGPROF, _alarm)  # ITIMER_PROF counts this process's CPU time
    # Python's default recursion limit, as in a user's process (a higher one hid the
    # RecursionErrors of deep nesting from this lane)
    sys.setrecursionlimit(1000)
    corpus = load_corpus()
    _warm_up(mix)
    conn.send(("ready", _rss()))
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if task is None:
            return
        start, stop = task
        counts: Counter[str] = Counter()
        failures: list[tuple[int, str, str]] = []
        for index in range(start, stop):
            current.value = index
            name = generator_of(seed, index, mix)
            signal.setitimer(signal.ITIMER_PROF, time_limit)
            try:
                try:
                    name, case = make_case(corpus, seed, index, mix)
                except Exception:  # noqa: BLE001 - a bug of the fuzzer itself, shown as such
                    outcome, detail = "exception", "the generator failed: " + traceback.format_exc(limit=-8)
                else:
                    outcome, detail = run_one(case, interpret)
            except _Timeout:  # raised between run_one's handlers and the disarm below
                outcome, detail = "hang", "interrupted by the time limit"
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            if outcome in FAILURES and known_elsewhere(detail):
                outcome = "known"
            counts[outcome] += 1
            counts[f"{name}:{outcome}"] += 1
            if outcome in FAILURES:
                failures.append((index, outcome, f"[{name}] {detail}"))
        current.value = -1
        try:
            conn.send(("done", (dict(counts), failures, _rss())))
        except OSError:  # the parent is gone
            return


@dataclass
class Report:
    inputs: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[int, str, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return sum(self.counts[k] for k in FAILURES)

    def summary(self) -> str:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()) if ":" not in k)
        per_generator: dict[str, int] = Counter()
        for k, v in self.counts.items():
            if ":" in k:
                per_generator[k.split(":")[0]] += v
        generators = ", ".join(f"{k} {v}" for k, v in sorted(per_generator.items()))
        return (f"{self.inputs} inputs in {self.seconds:.1f} s ({self.inputs / max(self.seconds, 1e-9):.0f}/s): {outcomes}; "
                f"by generator: {generators}; failures {self.failed}")


# A worker is replaced by a fresh one after this many inputs, and its memory is judged then:
# if its anonymous resident memory (the heap, not the library code a fresh fork pages in) grew
# in the median batch of the second half of its life by more than GROWTH_PER_INPUT bytes per
# input, the lane reports a `memory-growth` failure. The second half: the bounded caches (4,096
# entries each) fill during a worker's first few thousand inputs (measured in one process over
# 8,000 inputs of the whole mix: +31 MB in the first 2,000, then flat within 36-41 MB); the
# median: one large input's peak, which the allocator keeps, is not a leak. Such a leak once grew a worker by
# 30 KB per input until it died at its address-space limit after ~50,000 inputs (seed 41204):
# a parse aged the caller's young garbage cycles into the oldest generation, where only rare
# full collections look (fixed in ktir.syntax.parser.parse, tests/syntax/test_parse_gc.py).
RECYCLE_AFTER = 20_000
GROWTH_PER_INPUT = 4_096


def _rss() -> int:
    """This process's anonymous resident memory in bytes (its resident size where the kernel
    does not say; 0 where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def memory_growth(sizes: list[int], per_batch: list[int]) -> int | None:
    """The median growth per input over the second half of a worker's batches (sizes before
    each batch and after the last; the batches' sizes), None with fewer than 4 batches."""
    if len(per_batch) < 4:
        return None
    skip = len(per_batch) // 2
    steps = sorted((b - a) / n for a, b, n in zip(sizes[skip:], sizes[skip + 1:], per_batch[skip:], strict=False))
    return int(steps[len(steps) // 2])


class _Slot:
    """One worker process and the batch it is running."""

    def __init__(self, ctx: Any, seed: int, time_limit: float, memory_limit: int, interpret: bool, mix: dict[str, int]) -> None:
        self.current = ctx.Value("q", -1, lock=False)
        self.conn, child = ctx.Pipe()
        # not a daemon: the commands a worker runs may start processes of their own (-j N);
        # stop() and the parent's cleanup end it
        self.proc = ctx.Process(target=_worker, args=(child, self.current, seed, time_limit, memory_limit, interpret, mix),
                                daemon=False)
        self.proc.start()
        child.close()
        self.sizes: list[int] = [self.conn.recv()[1]]  # resident size when ready, then after each batch
        self.batches: list[int] = []
        self.task: tuple[int, int] | None = None
        self.ran = 0  # inputs this worker has run
        self.last_index = -1
        self.since = time.monotonic()

    def submit(self, task: tuple[int, int]) -> None:
        self.task = task
        self.last_index = -1
        self.since = time.monotonic()
        self.conn.send(task)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


def fuzz(inputs: int, seed: int = 0, jobs: int = 2, time_limit: float = 5.0, memory_limit: int = 2 << 30,
         batch: int = 250, interpret: bool = True, progress: bool = False, log_every: int = 0, start: int = 0,
         mix: dict[str, int] | None = None) -> Report:
    """Run inputs `start` .. `start + inputs - 1` of the run `seed` on `jobs` worker processes,
    drawn from the generators in the shares of `mix` (default MIX: all of them)."""
    mix = dict(mix or MIX)
    ctx = mp.get_context("fork" if sys.platform != "win32" else "spawn")
    report = Report(inputs=inputs)
    started = time.monotonic()
    pending = [(i, min(i + batch, start + inputs)) for i in range(start, start + inputs, batch)]
    pending.reverse()
    _warm_up(mix)  # here once: the forked workers start with it done
    slots = [_Slot(ctx, seed, time_limit, memory_limit, interpret, mix) for _ in range(max(1, jobs))]
    # the worker's own timer interrupts Python code; the parent kills a worker stuck in C
    # wall-clock backstop for a worker stuck where the CPU timer cannot interrupt it; generous,
    # since on a loaded machine wall time runs several times the CPU time
    hard_limit = time_limit * 10 + 5
    done = 0
    next_log = log_every
    try:
        for slot in slots:
            if pending:
                slot.submit(pending.pop())
        while any(s.task is not None for s in slots):
            busy = {s.conn: s for s in slots if s.task is not None}
            for conn in wait(list(busy), timeout=0.25):
                slot = busy[conn]  # type: ignore[index]
                try:
                    _, (counts, failures, size) = slot.conn.recv()
                except (EOFError, OSError):
                    _replace_dead(slots, slot, ctx, seed, time_limit, memory_limit, interpret, report, pending, "memory", mix)
                    continue
                report.counts.update(counts)
                report.failures.extend(failures)
                if log_every:  # failing indices at once: a long run stopped early still names them
                    for index, kind, _ in failures:
                        print(f"failure: seed {seed} index {index}: {kind}", file=sys.stderr, flush=True)
                assert slot.task is not None
                done += slot.task[1] - slot.task[0]
                slot.ran += slot.task[1] - slot.task[0]
                slot.sizes.append(size)
                slot.batches.append(slot.task[1] - slot.task[0])
                slot.task = None
                if slot.ran >= RECYCLE_AFTER:
                    _judge_memory(slot, report, seed)
                    slot.stop()
                    where = slots.index(slot)
                    slot = slots[where] = _Slot(ctx, seed, time_limit, memory_limit, interpret, mix)
                if pending:
                    slot.submit(pending.pop())
                if progress:
                    print(f"\r{done}/{inputs} inputs, failures {report.failed}", end="", file=sys.stderr, flush=True)
                elif log_every and done >= next_log:
                    next_log += log_every
                    print(f"{done}/{inputs} inputs in {time.monotonic() - started:.0f} s, failures {report.failed}", file=sys.stderr, flush=True)
            now = time.monotonic()
            for slot in slots:
                if slot.task is None:
                    continue
                index = slot.current.value
                if index != slot.last_index:
                    slot.last_index, slot.since = index, now
                elif index >= 0 and now - slot.since > hard_limit:
                    _replace_dead(slots, slot, ctx, seed, time_limit, memory_limit, interpret, report, pending, "hang", mix)
    finally:
        for slot in slots:
            slot.stop()
    if progress:
        print(file=sys.stderr)
    report.seconds = time.monotonic() - started
    report.failures.sort()
    return report


def _judge_memory(slot: _Slot, report: Report, seed: int) -> None:
    growth = memory_growth(slot.sizes, slot.batches)
    if growth is not None and growth > GROWTH_PER_INPUT:
        report.counts["memory-growth"] += 1
        report.failures.append((-1, "memory-growth", f"a worker grew by {growth} B per input in the median batch over "
                                f"{slot.ran} inputs ({slot.sizes[0] >> 20} MB to {slot.sizes[-1] >> 20} MB)"))
        print(f"failure: seed {seed}: memory-growth ({growth} B per input; MB after each batch: "
              f"{[size >> 20 for size in slot.sizes]})", file=sys.stderr, flush=True)


def _replace_dead(slots: list[_Slot], slot: _Slot, ctx: Any, seed: int, time_limit: float, memory_limit: int,
                  interpret: bool, report: Report, pending: list[tuple[int, int]], kind: str, mix: dict[str, int]) -> None:
    """A worker hung (killed here) or died (memory): record its input, re-queue the rest
    of its batch, start a new worker. The results it had not reported yet are re-run."""
    index = slot.current.value
    if slot.proc.is_alive():
        slot.proc.kill()
    slot.proc.join()
    assert slot.task is not None
    start, stop = slot.task
    report.counts[kind] += 1
    report.counts[f"{generator_of(seed, index, mix)}:{kind}"] += 1
    report.failures.append((index, kind, f"[{generator_of(seed, index, mix)}] worker "
                            f"{'killed after the time limit' if kind == 'hang' else f'died (exit code {slot.proc.exitcode})'}"))
    print(f"failure: seed {seed} index {index}: {kind} (worker replaced)", file=sys.stderr, flush=True)
    if index + 1 < stop:
        pending.append((index + 1, stop))
    # inputs before `index` in this batch ran but were not reported: run them again
    if start < index:
        pending.append((start, index))
    fresh = _Slot(ctx, seed, time_limit, memory_limit, interpret, mix)
    slots[slots.index(slot)] = fresh
    if pending:
        fresh.submit(pending.pop())


def save_failures(report: Report, seed: int, directory: Path, mix: dict[str, int] | None = None) -> list[Path]:
    """Write each failing input: a program as `<kind>-<hash>.ktir` (with its detail beside it
    in a .txt), a command line as a folder `<kind>-<hash>/` holding its files and command.txt."""
    from cli_case import CliCase, materialize

    mix = dict(mix or MIX)
    corpus = load_corpus()
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for index, kind, detail in report.failures:
        if index < 0:  # a worker's memory growth: no one input to keep; the log has the figures
            continue
        try:
            _, case = make_case(corpus, seed, index, mix)
        except Exception:  # noqa: BLE001 - the generator's own failure: its detail is the record
            case = f"// the generator failed on seed {seed} index {index}\n"
        if isinstance(case, CliCase):
            digest = hashlib.sha256(case.describe().encode("utf-8", "surrogatepass")).hexdigest()[:10]
            folder = directory / f"{kind}-{digest}"
            folder.mkdir(exist_ok=True)
            with contextlib.suppress(OSError):
                materialize(case, folder)
            (folder / "command.txt").write_text(case.describe(), errors="surrogateescape")
            (folder / "detail.txt").write_text(f"seed {seed} index {index}\n{detail}\n", errors="replace")
            written.append(folder)
            continue
        digest = hashlib.sha256(case.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        path = directory / f"{kind}-{digest}.ktir"
        path.write_text(case, errors="surrogatepass")
        path.with_suffix(".txt").write_text(f"seed {seed} index {index}\n{detail}\n", errors="replace")
        written.append(path)
    return written


def parse_mix(text: str) -> dict[str, int]:
    """`corpus,grammar` (equal shares) or `corpus=40,grammar=20`; names from GENERATORS."""
    mix: dict[str, int] = {}
    for part in text.split(","):
        name, _, share = part.partition("=")
        if name not in GENERATORS:
            raise argparse.ArgumentTypeError(f"unknown generator {name!r} (generators: {', '.join(GENERATORS)})")
        mix[name] = int(share) if share else MIX[name]
    return mix


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Corpus-mutation fuzzer for parse -> verify -> print -> re-parse -> run.")
    parser.add_argument("--inputs", type=int, default=20_000, help="number of inputs (default 20000, the CI lane)")
    parser.add_argument("--seed", type=int, default=0, help="run seed; a run is a pure function of it")
    parser.add_argument("--start", type=int, default=0, help="index of the first input (to split a run over machines)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="worker processes")
    parser.add_argument("--time-limit", type=float, default=5.0, help="seconds per input before it counts as a hang")
    parser.add_argument("--memory-limit", type=int, default=2 << 30, help="address-space bytes per worker (0: none)")
    parser.add_argument("--no-interpret", action="store_true", help="skip running small valid kernels")
    parser.add_argument("--save", type=Path, default=Path("fuzz-failures"), help="directory for failing inputs")
    parser.add_argument("--log-every", type=int, default=10_000, metavar="N", help="log progress every N inputs when not on a terminal")
    parser.add_argument("--show", type=int, metavar="INDEX", help="print input INDEX of the run and its outcome, then exit")
    parser.add_argument("--generators", type=parse_mix, default=None, metavar="NAME[=SHARE],...",
                        help=f"generators and their shares (default: {','.join(f'{k}={v}' for k, v in MIX.items())})")
    args = parser.parse_args(argv)
    mix = args.generators or dict(MIX)
    if args.show is not None:
        name, case = make_case(load_corpus(), args.seed, args.show, mix)
        print(case if isinstance(case, str) else case.describe(), end="")
        print(f"generator: {name}; outcome:", run_one(case, not args.no_interpret), file=sys.stderr)
        return 0
    report = fuzz(args.inputs, args.seed, args.jobs, args.time_limit, args.memory_limit, interpret=not args.no_interpret,
                  progress=sys.stderr.isatty(), log_every=args.log_every, start=args.start, mix=mix)
    print(report.summary())
    if report.failures:
        for path in save_failures(report, args.seed, args.save, mix):
            print(f"saved {path}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

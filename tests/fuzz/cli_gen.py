"""Command lines for every `ktir` subcommand, their flags and values fuzzed (issue 33).

The commands and their options come from the command line's own argument parser
(`ktir.cli.build_parser`), so a new subcommand or flag is fuzzed without a change here.
Each input picks a command, a random subset of its options in random order, and values by
what the option takes: numbers (negative, zero, huge, NaN, not a number), paths (a KTIR
file, a mutated one, a missing one, a folder, an empty, non-UTF-8 or deeply nested
file, a link out of the folder, `-`), names, and text in odd encodings (a path that is not
UTF-8, which Python hands over as surrogate escapes).

Two limits keep a run safe and quick: outputs are written only inside the case's folder
(every path is relative to it), and the conformance suite runs one case (`-k` is always
given), with no adapter command (that would run a shell command).
"""

from __future__ import annotations

import argparse
import functools
import random
import re
from pathlib import Path

from cli_case import CliCase, Link
from readers_gen import FIXTURES, ONE_CASE, ROOT, npy_bytes

# a few small programs (the interpreter runs them in well under a second)
EXAMPLES = ["vector_add.ktir", "softmax.ktir", "rmsnorm.ktir", "embedding_gather.ktir"]


@functools.cache
def commands() -> list[tuple[tuple[str, ...], list[argparse.Action]]]:
    """(command words, their actions) for every leaf subcommand of `ktir`."""
    from ktir.cli import build_parser

    out: list[tuple[tuple[str, ...], list[argparse.Action]]] = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out.append((path, [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]))
        for s in subs:
            for name, sub in s.choices.items():
                walk(sub, (*path, name))

    walk(build_parser(), ())
    return out


# options never generated: they run a shell command, or would import torch for every input
_NEVER = {"--adapter-cmd", "--adapter"}

NUMBERS = ["0", "1", "2", "-1", "-5", "3", "1000000000000", "9" * 30, "nan", "inf", "-inf", "1e999", "0.5", "abc", "",
           "0x10", "1_000", " 4", "\u0661", "2**63"]


def _ktir_text(rng: random.Random) -> bytes:
    from corpus_fuzz import mutate_text
    from grammar_gen import generate_text
    from limits_gen import generate_limits

    base = (ROOT / "examples" / rng.choice(EXAMPLES)).read_text()
    kind = rng.randrange(5)
    if kind == 0:
        if rng.random() < 0.3:  # a function name that is rich markup, or not ASCII
            prefix = rng.choice(["[/x]", "[bold]", "é", "a b"])
            base = re.sub(r"func\.func @([\w.$-]+)", lambda m: f'func.func @"{prefix}{m.group(1)}"', base, count=1)
        return base.encode()
    if kind == 1:
        return mutate_text(rng, base).encode("utf-8", "surrogatepass")
    if kind == 2:
        return generate_text(rng).encode()
    if kind == 3:
        return generate_limits(rng).encode()
    return rng.choice([b"", b"\xff\xfe", b"\xef\xbb\xbf" + base.encode(), base.encode()[:100], b"func.func @f( {"])


def _files(rng: random.Random) -> dict[str, bytes | Link]:
    files: dict[str, bytes | Link] = {
        "k.ktir": _ktir_text(rng),
        "ok.ktir": (ROOT / "examples" / "vector_add.ktir").read_bytes(),
        "empty.ktir": b"",
        "bad.ktir": b"\xff\xfe\x00garbage",
        "dir/": b"",
        "dir/inner.ktir": (ROOT / "examples" / "softmax.ktir").read_bytes(),
        "link.ktir": Link("../outside/secret.txt"),
        "a.npy": npy_bytes(rng, (1024,)),
        "t.toml": (ROOT / "ktir" / "targets" / "spyre.toml").read_bytes(),
        "r.json": (FIXTURES / "results.json").read_bytes(),
        "cap.toml": (FIXTURES / "capabilities.toml").read_bytes(),
        "w.toml": (FIXTURES / "waivers.toml").read_bytes(),
    }
    if rng.random() < 0.1:
        files["\udcff.ktir"] = files["ok.ktir"]  # a file name that is not UTF-8
    return files


_PATHS_IN = ["k.ktir", "k.ktir", "k.ktir", "ok.ktir", "empty.ktir", "bad.ktir", "dir", "link.ktir", "missing.ktir", "-",
             "\udcff.ktir", "a.npy", "t.toml", "r.json", "", ".", "dir/inner.ktir"]
_PATHS_OUT = ["out.ktir", "out.npz", "out.json", "dir", "missing/out", "k.ktir", "o.html", "", "\udcff.out", "-"]


def _value(rng: random.Random, action: argparse.Action, command: tuple[str, ...]) -> list[str]:
    """The values of one option (none for a flag)."""
    if action.nargs == 0:
        return []
    option = action.option_strings[0] if action.option_strings else action.dest
    if action.choices is not None and rng.random() < 0.8:
        return [str(rng.choice(list(action.choices)))]
    name = (action.dest or "").lower()
    if option in ("--arg", "--input"):
        key = rng.choice(["A", "B", "C", "x", "", "A=B"])
        value = rng.choice(["a.npy", "1.5", "nan", "-1", "99999999999999999999", "", "missing.npy", "dir", "true", "0x10"])
        return [f"{key}={value}" if rng.random() < 0.9 else key]
    if option == "--size":
        return [rng.choice(["R=-5", "R=0", "R=4", "R=1e9", "R", "=4", "R=x", "R=99999999999999999999", "N=8"])]
    if option == "--kernel":
        return [rng.choice(["add=k.ktir", "x=missing.ktir", "add", "=k.ktir"])]
    if option == "--target":
        return [rng.choice(["spyre", "wormhole_n150", "nope", "t.toml", "missing.toml", "dir", "", "k.ktir"])]
    if option == "--scheduler":
        return [rng.choice(["baseline", "natural", "search", "nope", ""])]
    if option == "--func":
        return [rng.choice(["vector_add", "softmax", "f", "nope", "", "@f"])]
    if option == "-k":
        return [rng.choice([ONE_CASE, ONE_CASE, "core.arith.addf.f16.16", "[", "", "no-such-case"])]
    if option == "--generic-ops":
        return [rng.choice(["ktdp", "linalg,arith", ",", "", "x.y", "ktdp.load"])]
    if option in ("-j", "--jobs"):
        return [rng.choice(["1", "2", "0", "-1", "1000", "x", "1.5", "9" * 30])]
    if option == "--time-budget":
        return [rng.choice(["0.2", "0", "-1", "nan", "inf", "x", "1e-9", "0.05"])]
    if option in ("--timeout", "--step-limit", "--random-inputs", "--seed") or action.type in (int, float):
        return [rng.choice(NUMBERS)]
    if not action.option_strings:  # positional: a file to read, or a name
        count = 1 if action.nargs in (None, "?") else rng.choice([1, 1, 2])
        if command[:2] == ("conformance", "schema"):
            return [rng.choice(["results", "capabilities", "waivers", "nope"])]
        if command[:1] == ("conformance",):
            return [rng.choice(["r.json", "r.json", "missing.json", "k.ktir", "dir", "bad.ktir", "link.ktir"]) for _ in range(count)]
        if command[:2] == ("targets", "show"):
            return [rng.choice(["spyre", "wormhole_n150", "t.toml", "nope", "k.ktir", "dir", "link.ktir", ""])]
        if command[:2] == ("lower", "torch"):
            return [rng.choice(["missing.pt2", "a.npy", "dir", "empty.ktir"])]
        if command[:2] == ("lower", "sdsc"):
            return [rng.choice(["dir", "k.ktir", "missing", "empty.ktir", "link.ktir"])]
        return [rng.choice(_PATHS_IN) for _ in range(count)]
    if any(w in name for w in ("output", "out", "report", "junit", "html", "trace")):
        return [rng.choice(_PATHS_OUT)]
    if isinstance(action.type, type) and issubclass(action.type, Path):
        return [rng.choice(_PATHS_IN + _PATHS_OUT)]
    return [rng.choice(_PATHS_IN + NUMBERS + ["x", "é", "\udcff"])]


# Commands that load the whole conformance suite cost a fifth of a second or more: a tenth
# of the share of the others.
def _weight(command: tuple[str, ...]) -> float:
    return 0.1 if command[:2] in (("conformance", "run"), ("conformance", "list")) else 1.0


def generate_cli(rng: random.Random) -> CliCase:
    every = commands()
    command, actions = rng.choices(every, [_weight(c) for c, _ in every])[0]
    argv: list[str] = list(command)
    positionals = [a for a in actions if not a.option_strings]
    options = [a for a in actions if a.option_strings and a.option_strings[0] not in _NEVER and "--version" not in a.option_strings]
    chosen = rng.sample(options, rng.randint(0, min(len(options), 4))) if options else []
    if command[:2] == ("conformance", "run"):
        chosen = [a for a in chosen if a.option_strings[0] != "-k"]
        argv += ["-k", ONE_CASE if rng.random() < 0.8 else "core.arith.addf.f16.16"]
    parts: list[list[str]] = [[rng.choice(a.option_strings), *_value(rng, a, command)] for a in chosen]
    if rng.random() < 0.95:  # positionals (sometimes none: the usage error)
        parts += [_value(rng, a, command) for a in positionals]
    rng.shuffle(parts)
    for p in parts:
        argv += p
    if rng.random() < 0.05:
        argv.append(rng.choice(["--nope", "-", "--", "-x", "--help"]))
    stdin = (ROOT / "examples" / "vector_add.ktir").read_bytes() if rng.random() < 0.5 else rng.choice([b"", b"\xff", b"func.func @f( {"])
    return CliCase(argv, _files(rng), stdin=stdin, label="flags of ktir " + " ".join(command))


def all_commands() -> list[str]:
    return [" ".join(c) for c, _ in commands()]

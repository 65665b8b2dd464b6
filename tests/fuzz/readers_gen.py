"""Bad files for every input format a `ktir` command reads (issue 33): SDSC bundles,
conformance capability, waiver, results and suite manifest files, program manifests (with
their KTIR, weights and inputs), target descriptions and `.npy` arguments.

Each generator starts from a valid file of its format and mutates it: a value replaced by
one from a list of troublemakers (negative, zero, huge, infinite, NaN, a path with `..`,
an absolute path, a link out of the folder, deep nesting, the wrong type), a key dropped
or added, bytes flipped, the text cut short or made non-UTF-8. The result is a CliCase:
the files, and the command that reads them.
"""

from __future__ import annotations

import functools
import io
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_case import CliCase, Link

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
ONE_CASE = "core.arith.addf.f32.4x8"  # a conformance case that runs in a fraction of a second

# ---------------------------------------------------------------- troublemakers

NUMBERS: list[Any] = [-1, 0, 1, 2, 3, 10**12, 2**63, -(2**63) - 1, 2**64, 1e308, -0.0, 0.5, 10**400]
STRINGS = ["", "../outside.txt", "../../outside/secret.txt", "/etc/passwd", "link", "dir", "missing.json", "a\u00e9",
           "\x00", "x" * 5000, "core", "f16", "spyre", "reference", "[/x]", "[bold]b", "%s{0}\\"]


def _troublemaker(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.35:
        return rng.choice(NUMBERS)
    if r < 0.6:
        return rng.choice(STRINGS)
    if r < 0.7:
        return rng.choice([True, None, [], {}, [1, "a"], {"k": 1}])
    if r < 0.8:
        return rng.choice([float("inf"), float("nan"), -float("inf")])
    depth = rng.choice([50, 500, 5000])
    return _deep(depth)


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position in a JSON-like value (dict keys and list indices), without recursion
    past a modest depth (the fixtures are shallow)."""
    out = [prefix]
    if len(prefix) > 12:
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_paths(v, (*prefix, i)))
    return out


def mutate_data(rng: random.Random, data: Any) -> Any:
    """A structural mutation of a JSON-like value (a deep copy is changed)."""
    data = json.loads(json.dumps(data))
    for _ in range(rng.choice([1, 1, 2, 3])):
        paths = [p for p in _paths(data) if p]
        if not paths:
            return _troublemaker(rng)
        path = rng.choice(paths)
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        kind = rng.randrange(5)
        if kind < 3:
            parent[key] = _troublemaker(rng)
        elif kind == 3:
            del parent[key]
        elif isinstance(parent, dict):
            parent[rng.choice(["extra", "unknown_key", "", "schema_version"])] = _troublemaker(rng)
        else:
            parent.append(parent[key])
    return data


def dump_json(rng: random.Random, data: Any) -> bytes:
    try:
        text = json.dumps(data, allow_nan=True, indent=rng.choice([None, 1]))
    except (ValueError, RecursionError):
        text = "[" * 5000 + "]" * 5000
    return text.encode("utf-8", "surrogatepass")


_TOML_NUMBER = re.compile(r"(?<![\w.\"])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.\"])")
_TOML_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def mutate_toml(rng: random.Random, text: str) -> str:
    """Text-level mutations of TOML (the standard library does not write it)."""
    for _ in range(rng.choice([1, 1, 2])):
        kind = rng.randrange(6)
        lines = text.split("\n")
        if kind == 0:
            spots = list(_TOML_NUMBER.finditer(text))
            if spots:
                m = rng.choice(spots)
                value = rng.choice(["0", "-1", "inf", "nan", "-inf", "1e309", "1000000000000", str(2**64), "0.0", "1e-320"])
                text = text[: m.start()] + value + text[m.end() :]
        elif kind == 1:
            spots = list(_TOML_STRING.finditer(text))
            if spots:
                m = rng.choice(spots)
                text = text[: m.start()] + json.dumps(rng.choice(STRINGS)) + text[m.end() :]
        elif kind == 2 and len(lines) > 1:
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif kind == 3:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(lines))
            text = "\n".join(lines)
        elif kind == 4:
            depth = rng.choice([100, 1000, 5000])
            lines.insert(rng.randrange(len(lines) + 1), "deep = " + "[" * depth + "1" + "]" * depth)
            text = "\n".join(lines)
        else:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(["[x", "a = ", "= 1", "[[case]]", 'x = "\\u00"', "a.b.c = {"]))
            text = "\n".join(lines)
    return text


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    kind = rng.randrange(6)
    if kind == 0 and data:
        i = rng.randrange(len(data))
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    if kind == 1:
        return data[: rng.randrange(len(data) + 1)]
    if kind == 2:
        i = rng.randrange(len(data) + 1)
        return data[:i] + rng.choice([b"\xff", b"\xe9", b"\xc3", b"\x00", b"\xef\xbb\xbf", b"\xed\xa0\x80"]) + data[i:]
    if kind == 3:
        return b"\xef\xbb\xbf" + data
    if kind == 4:
        return b""
    return data.decode("utf-8", "replace").encode("utf-16")


def _maybe_bytes(rng: random.Random, data: bytes, chance: float = 0.25) -> bytes:
    return mutate_bytes(rng, data) if rng.random() < chance else data


def _paths_files(rng: random.Random) -> dict[str, bytes | Link]:
    """Files a mutated path may name: a link out of the folder, a folder, a link in."""
    return {
        "link": Link("../outside/secret.txt"),
        "dir/": b"",
        "inlink.json": Link("w.json") if rng.random() < 0.5 else Link("nowhere"),
    }


# ---------------------------------------------------------------- formats


@functools.cache
def _read(path: Path) -> bytes:
    return path.read_bytes()


def conformance_capabilities(rng: random.Random) -> CliCase:
    if rng.random() < 0.5:
        import tomllib

        data = tomllib.loads(_read(FIXTURES / "capabilities.toml").decode())
        name, content = "cap.json", dump_json(rng, mutate_data(rng, data))
    else:
        name, content = "cap.toml", mutate_toml(rng, _read(FIXTURES / "capabilities.toml").decode()).encode()
    files: dict[str, bytes | Link] = {name: _maybe_bytes(rng, content), **_paths_files(rng), **_one_case_suite()}
    return CliCase(["conformance", "run", "--suite", "suite", "-k", ONE_CASE, "-q", "--capabilities",
                    rng.choice([name, name, "link", "dir"])], files, label="conformance capabilities")


def conformance_waivers(rng: random.Random) -> CliCase:
    if rng.random() < 0.5:
        import tomllib

        data = tomllib.loads(_read(FIXTURES / "waivers.toml").decode())
        name, content = "w.json", dump_json(rng, mutate_data(rng, data))
    else:
        name, content = "w.toml", mutate_toml(rng, _read(FIXTURES / "waivers.toml").decode()).encode()
    files: dict[str, bytes | Link] = {name: _maybe_bytes(rng, content), **_paths_files(rng), **_one_case_suite()}
    return CliCase(["conformance", "run", "--suite", "suite", "-k", ONE_CASE, "-q", "--waivers", name], files,
                   label="conformance waivers")


def conformance_results(rng: random.Random) -> CliCase:
    data = json.loads(_read(FIXTURES / "results.json"))
    content = _maybe_bytes(rng, dump_json(rng, mutate_data(rng, data) if rng.random() < 0.8 else data))
    files: dict[str, bytes | Link] = {"r.json": content, "good.json": _read(FIXTURES / "results.json"), **_paths_files(rng)}
    if rng.random() < 0.5:
        argv = ["conformance", "report", "r.json"]
        if rng.random() < 0.5:
            argv += ["--html", rng.choice(["o.html", "dir", "missing/o.html"]), "--junit", rng.choice(["o.xml", "dir/"])]
    else:
        argv = ["conformance", "compare", *rng.sample(["r.json", "good.json"], 2)]
    return CliCase(argv, files, label="conformance results")


@functools.cache
def _suite_case() -> tuple[str, bytes, bytes, dict[str, Any]]:
    import tomllib

    from conformance.model import SUITE_ROOT

    manifest = tomllib.loads((SUITE_ROOT / "manifest" / "core.toml").read_text())
    case = next(c for c in manifest["case"] if c["id"] == ONE_CASE)
    return case["file"], (SUITE_ROOT / case["file"]).read_bytes(), (SUITE_ROOT / case["golden"]).read_bytes(), case


def _one_case_suite() -> dict[str, bytes | Link]:
    """A suite of the one case (running the whole suite's manifests costs half a second)."""
    from conformance.toml_out import manifest

    file, ktir_text, golden, case = _suite_case()
    return {"suite/manifest/core.toml": manifest({"schema_version": 1, "level": "core"}, [case]).encode(),
            "suite/" + file: ktir_text, "suite/" + case["golden"]: golden}


def conformance_suite(rng: random.Random) -> CliCase:
    from conformance.toml_out import manifest

    file, ktir_text, golden, case = _suite_case()
    mutated = mutate_data(rng, case) if rng.random() < 0.8 else case
    try:  # the writer takes TOML's values only (no null, no deep lists)
        text = manifest({"schema_version": 1, "level": "core"}, [mutated] if isinstance(mutated, dict) else [case])
    except (TypeError, ValueError, RecursionError):
        text = mutate_toml(rng, manifest({"schema_version": 1, "level": "core"}, [case]))
    if rng.random() < 0.3:
        text = mutate_toml(rng, text)
    files: dict[str, bytes | Link] = {
        "suite/manifest/core.toml": _maybe_bytes(rng, text.encode(), 0.15),
        "suite/" + file: _maybe_bytes(rng, ktir_text, 0.2),
        "suite/" + case["golden"]: _maybe_bytes(rng, golden, 0.2),
    }
    argv = ["conformance", rng.choice(["list", "run"]), "--suite", "suite", "-k", ONE_CASE]
    if argv[1] == "run":
        argv.append("-q")
    return CliCase(argv, files, label="conformance suite manifest")


def _program_files(rng: random.Random) -> dict[str, bytes | Link]:
    folder = FIXTURES / "program"
    manifest = json.loads(_read(folder / "p.manifest.json"))
    if rng.random() < 0.7:
        manifest = mutate_data(rng, manifest)
    files: dict[str, bytes | Link] = {
        "p.manifest.json": _maybe_bytes(rng, dump_json(rng, manifest), 0.15),
        "p.ktir": _maybe_bytes(rng, _read(folder / "p.ktir"), 0.2),
        "w.npz": _maybe_bytes(rng, _read(folder / "w.npz"), 0.2),
        "x.npy": npy_bytes(rng) if rng.random() < 0.5 else _read(folder / "x.npy"),
        "link": Link("../outside/secret.txt"),
        "dir/": b"",
    }
    if rng.random() < 0.2:  # the kernel file itself a link: out of the folder, or in
        files["p.ktir"] = Link(rng.choice(["../outside/secret.txt", "x.npy", "dir", "nowhere"]))
    return files


def program(rng: random.Random) -> CliCase:
    files = _program_files(rng)
    argv = ["run-program", "p.manifest.json"]
    argv += rng.choice([["--random-inputs", str(rng.choice([0, 1, -1, 2**64]))], ["--input", "x=x.npy"],
                        ["--input", rng.choice(["x=link", "x=dir", "y=x.npy", "x", "x=missing.npy"])]])
    if rng.random() < 0.3:
        argv += ["--out", rng.choice(["o.npz", "dir", "missing/o.npz"])]
    if rng.random() < 0.2:
        files["k.ktir"] = _read(FIXTURES / "program" / "p.ktir")
        argv += ["--kernel", rng.choice(["add=k.ktir", "nope=k.ktir", "add=link", "add="])]
    return CliCase(argv, files, label="program manifest")


@functools.cache
def _bundle() -> tuple[str, dict[str, bytes]]:
    data = ROOT / "tests" / "lower" / "data"
    text = ('module {\n  func.func @sdsc_bundle() {\n'
            '    sdscbundle.sdsc_execute () {sdsc_filename="sdsc_4.json"}\n'
            '    sdscbundle.sdsc_execute () {sdsc_filename="sdsc_7.json"}\n    return\n  }\n}\n')
    return text, {"sdsc_4.json": (data / "swiglu_decode_sdsc_4_add_lx_bcast.json").read_bytes(),
                  "sdsc_7.json": (data / "swiglu_decode_sdsc_7_restickify.json").read_bytes()}


def sdsc_bundle(rng: random.Random) -> CliCase:
    text, sdscs = _bundle()
    kind = rng.randrange(3)
    if kind == 0:  # the bundle names a troublesome file
        text = text.replace("sdsc_7.json", rng.choice(STRINGS[1:6] + ["sdsc_7.json", "inlink.json", "dir"]))
    elif kind == 1:
        from corpus_fuzz import mutate_text

        text = mutate_text(rng, text)
    files: dict[str, bytes | Link] = {"b/bundle.mlir": _maybe_bytes(rng, text.encode(), 0.1)}
    for name, content in sdscs.items():
        if rng.random() < 0.5:
            content = dump_json(rng, mutate_data(rng, json.loads(content)))
        files["b/" + name] = _maybe_bytes(rng, content, 0.1)
    files["b/link"] = Link("../../outside/secret.txt")
    files["b/inlink.json"] = Link("sdsc_4.json")
    files["b/dir/"] = b""
    files["outside.txt"] = b"1"
    argv = ["lower", "sdsc", "b"]
    argv += rng.choice([[], ["--skip-missing"], ["-o", "out.ktir"], ["-v"]])
    return CliCase(argv, files, label="SDSC bundle")


@functools.cache
def _target_text() -> str:
    return (ROOT / "ktir" / "targets" / "spyre.toml").read_text()


def target(rng: random.Random) -> CliCase:
    text = mutate_toml(rng, _target_text()) if rng.random() < 0.9 else _target_text()
    files: dict[str, bytes | Link] = {"t.toml": _maybe_bytes(rng, text.encode(), 0.1),
                                      "k.ktir": _read(ROOT / "examples" / "vector_add.ktir")}
    if rng.random() < 0.5:
        argv = ["targets", "show", "t.toml"] + (["--json"] if rng.random() < 0.5 else [])
    else:
        argv = ["run", "k.ktir", "--random-inputs", "0", "--target", "t.toml", "--report"]
    return CliCase(argv, files, label="target description")


def npy_bytes(rng: random.Random, shape: tuple[int, ...] = (64,)) -> bytes:
    import numpy as np

    kind = rng.randrange(10)
    buf = io.BytesIO()
    if kind == 0:
        np.save(buf, np.array(["ab", "c"] * (shape[0] // 2)))
    elif kind == 1:
        np.save(buf, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    elif kind == 2:
        np.save(buf, np.zeros(shape, dtype=rng.choice(["f4", ">f2", "i8", "u1", "c8", "bool", "f8", "V2"])))
    elif kind == 3:
        np.save(buf, np.float16(1.5))
    elif kind == 4:
        np.save(buf, np.zeros((2, 3, 4), np.float16))
    elif kind == 5:
        np.savez(buf, a=np.zeros(shape, np.float16))
    elif kind == 6:  # a header claiming far more data than follows
        np.save(buf, np.zeros(shape, np.float16))
        return buf.getvalue().replace(b"(64,)", b"(100000000000,)", 1)
    elif kind == 7:
        np.save(buf, np.full(shape, np.nan, np.float16))
    else:
        np.save(buf, np.zeros(shape, np.float16))
        return mutate_bytes(rng, buf.getvalue())
    return buf.getvalue()


def npy_arguments(rng: random.Random) -> CliCase:
    import numpy as np

    def good() -> bytes:
        buf = io.BytesIO()
        np.save(buf, np.arange(1024, dtype=np.float16))
        return buf.getvalue()

    files: dict[str, bytes | Link] = {"k.ktir": _read(ROOT / "examples" / "vector_add.ktir"),
                                      "a.npy": npy_bytes(rng, (1024,)), "b.npy": good(), "c.npy": good(),
                                      "link": Link("../outside/secret.txt"), "dir/": b""}
    args = ["--arg", f"A={rng.choice(['a.npy', 'a.npy', 'link', 'dir', '1.5', 'nan', '', 'missing.npy'])}",
            "--arg", "B=b.npy", "--arg", rng.choice(["C=c.npy", "C=a.npy", "D=c.npy", "C", "=c.npy"])]
    argv = ["run", "k.ktir", *args]
    if rng.random() < 0.3:
        argv += ["--out", rng.choice(["o.npz", "dir", "missing/o.npz"])]
    return CliCase(argv, files, label=".npy arguments")


READERS: list[tuple[Callable[[random.Random], CliCase], int]] = [
    (conformance_capabilities, 1), (conformance_waivers, 1), (conformance_results, 3), (conformance_suite, 1),
    (program, 3), (sdsc_bundle, 3), (target, 3), (npy_arguments, 3),
]
_CHOICES = [f for f, w in READERS for _ in range(w)]


def generate_reader(rng: random.Random) -> CliCase:
    return rng.choice(_CHOICES)(rng)

"""Malformed and mutated user inputs besides KTIR text: SDSC JSON, target TOML, program
manifests, conformance manifests and `.npy` arguments. Each loader raises only its own
error type (which the CLI prints as one line), never another exception; paths a manifest
names stay inside its folder; `.npy` files are never unpickled.

The mutations reuse the KTIR fuzzer's text mutators plus value mutations of the decoded
document, from fixed seeds.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import pickle
import random
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

try:  # tests/ as a package, or this directory on sys.path (pytest's default)
    from . import corpus_fuzz as cf
except ImportError:
    import corpus_fuzz as cf  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
ODD_VALUES: list[Any] = [*cf.INTERESTING, None, "", "x", "../../etc/passwd", [], {}, 1.5, True, -1, [1, [2]], {"a": 1}]


def _mutate_value(rng: random.Random, data: Any) -> Any:
    """Replace, delete or duplicate one node somewhere in a decoded JSON/TOML document."""
    if isinstance(data, dict) and data:
        key = rng.choice(list(data))
        roll = rng.random()
        if roll < 0.15:
            del data[key]
        elif roll < 0.3:
            data[key] = copy.deepcopy(rng.choice(ODD_VALUES))
        else:
            data[key] = _mutate_value(rng, data[key])
        return data
    if isinstance(data, list) and data:
        i = rng.randrange(len(data))
        roll = rng.random()
        if roll < 0.15:
            del data[i]
        elif roll < 0.25:
            data.append(copy.deepcopy(data[i]))
        else:
            data[i] = _mutate_value(rng, data[i])
        return data
    return copy.deepcopy(rng.choice(ODD_VALUES))


def _mutants(texts: list[str], seed: int, n: int, decode: Callable[[str], Any], encode: Callable[[Any], str]) -> list[str]:
    out = []
    for i in range(n):
        rng = random.Random(f"{seed}:{i}")
        text = rng.choice(texts)
        if rng.random() < 0.6:
            data = decode(text)
            for _ in range(rng.randint(1, 3)):
                data = _mutate_value(rng, data)
            text = encode(data)
        else:
            for _ in range(rng.randint(1, 2)):
                text = rng.choice(cf._MUTATOR_FNS)(rng, text, texts)
        out.append(text)
    return out


HOSTILE_BYTES = [b"", b"\xff\xfe\x00garbage", b"[" * 100_000, b"a = " + b"[" * 100_000, b"\x00" * 64, b"{}", b"[]", b"null"]


def _toml_text(data: Any) -> str:
    """A small TOML writer for mutated documents (tables, arrays of tables, values)."""
    lines: list[str] = []

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v if x is not None) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items() if x is not None) + "}"
        return '""'

    def table(prefix: str, d: dict[str, Any]) -> None:
        for k, v in d.items():
            if v is not None and not isinstance(v, dict) and not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v)):
                lines.append(f"{json.dumps(k)} = {value(v)}")
        for k, v in d.items():
            name = f"{prefix}{json.dumps(k)}"
            if isinstance(v, dict):
                lines.append(f"[{name}]")
                table(name + ".", v)
            elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                for item in v:
                    lines.append(f"[[{name}]]")
                    table(name + ".", item)

    if isinstance(data, dict):
        table("", data)
    return "\n".join(lines) + "\n"


def _only(expected: tuple[type[BaseException], ...], load: Callable[[], Any]) -> None:
    """Run `load`; any exception outside `expected` propagates and fails the test."""
    with contextlib.suppress(expected):
        load()


# ---------------------------------------------------------------- SDSC JSON


def _sdsc_samples() -> list[str]:
    return [p.read_text() for p in sorted((ROOT / "tests" / "lower" / "data").glob("*.json"))]


def test_mutated_sdsc_files_give_sdsc_errors(tmp_path: Path) -> None:
    from ktir.lower import SdscError, lower_path

    path = tmp_path / "sdsc_0_op.json"
    for text in _mutants(_sdsc_samples(), 18, 250, json.loads, json.dumps):
        path.write_text(text)
        _only((SdscError,), lambda: lower_path(str(path)))
    for data in HOSTILE_BYTES:
        path.write_bytes(data)
        _only((SdscError,), lambda: lower_path(str(path)))


def test_sdsc_fold_props_of_the_wrong_type_is_an_sdsc_error(tmp_path: Path) -> None:
    from ktir.lower import SdscError, lower_path

    data = json.loads(_sdsc_samples()[0])
    ((key, body),) = data.items()
    body["sdscFoldProps_"] = 7  # the lowering iterates it: it once raised TypeError
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SdscError, match=r"sdscFoldProps_: expected a list"):
        lower_path(str(path))


def test_sdsc_cli_reports_one_line_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ktir.cli import main

    for data in (b"[" * 100_000, b"\xff\xfe", b'{"x": {"dscs_": [{"op": {"N_": 3}}], "numCoresUsed_": 1}}'):
        path = tmp_path / "bad.json"
        path.write_bytes(data)
        assert main(["lower", "sdsc", str(path)]) != 0
        err = capsys.readouterr().err
        assert "Traceback" not in err and "error[" in err, err


# ---------------------------------------------------------------- target TOML


def test_mutated_target_files_give_target_errors() -> None:
    from ktir.targets.loader import TargetError, parse_target

    texts = [p.read_text() for p in sorted((ROOT / "ktir" / "targets").glob("*.toml"))]
    for text in _mutants(texts, 18, 250, tomllib.loads, _toml_text):
        _only((TargetError,), lambda: parse_target(text, "t.toml"))  # noqa: B023
    for data in HOSTILE_BYTES:
        _only((TargetError,), lambda: parse_target(data.decode("utf-8", "replace"), "t.toml"))  # noqa: B023


def test_target_file_that_is_not_utf8_is_a_target_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ktir.cli import main
    from ktir.targets.loader import TargetError, load_target

    path = tmp_path / "t.toml"
    path.write_bytes(b"\xff\xfe\x00schema_version = 1")
    with pytest.raises(TargetError, match="not UTF-8"):
        load_target(path)
    assert main(["targets", "show", str(path)]) != 0
    assert "Traceback" not in capsys.readouterr().err


# ---------------------------------------------------------------- program manifests


def _program_manifest() -> dict[str, Any]:
    from ktir.lower.torch.manifest import Manifest

    layout = {"dim_order": [0], "stick_dim": 0, "stick_elements": 64, "sticks": 1}
    buffer = {"name": "x", "kind": "input", "dtype": "f16", "shape": [4], "elements": 4, "source": "x", "layout": layout, "writers": []}
    tensor = {"name": "x", "buffer": "x", "dtype": "f16", "offset": 0, "shape": [4], "strides": [1]}
    data = {"program": "P", "target": "spyre", "cores": 32, "ktir": "p.ktir", "weights": None, "buffers": [buffer],
            "kernels": [], "inputs": [tensor], "outputs": [tensor]}
    Manifest.model_validate(data)  # the mutations start from a valid manifest
    return data


def test_mutated_program_manifests_give_program_errors(tmp_path: Path) -> None:
    from ktir.lower.torch.program import Program, ProgramError

    (tmp_path / "p.ktir").write_text("func.func @k(%x: index) {\n  return\n}\n")
    path = tmp_path / "p.manifest.json"
    for text in _mutants([json.dumps(_program_manifest())], 18, 200, json.loads, json.dumps):
        path.write_text(text)
        _only((ProgramError, OSError), lambda: Program.load(path))
    for data in HOSTILE_BYTES:
        path.write_bytes(data)
        _only((ProgramError, OSError), lambda: Program.load(path))


@pytest.mark.parametrize("field", ["ktir", "weights"])
@pytest.mark.parametrize("name", ["../secret.ktir", "/etc/passwd", "sub/../../x", "C:\\x.ktir", "..\\x"])
def test_program_manifest_paths_stay_in_its_folder(tmp_path: Path, field: str, name: str) -> None:
    from ktir.lower.torch.program import Program, ProgramError

    data = _program_manifest()
    data[field] = name
    path = tmp_path / "p.manifest.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProgramError, match="relative path inside the manifest's folder"):
        Program.load(path)


def test_program_with_a_damaged_weights_file_is_a_program_error(tmp_path: Path) -> None:
    from ktir.lower.torch.program import Program, ProgramError

    data = _program_manifest()
    data["weights"] = "w.npz"
    (tmp_path / "p.ktir").write_text("func.func @k(%x: index) {\n  return\n}\n")
    (tmp_path / "w.npz").write_bytes(b"PK\x03\x04 not a zip")
    path = tmp_path / "p.manifest.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProgramError, match="not a readable .npz"):
        Program.load(path)


# ---------------------------------------------------------------- conformance manifests


def test_mutated_conformance_manifests_give_manifest_errors(tmp_path: Path) -> None:
    from conformance.model import ManifestError, load_manifest

    texts = [p.read_text() for p in sorted((ROOT / "conformance" / "manifest").glob("*.toml"))]
    path = tmp_path / "core.toml"
    for text in _mutants(texts, 18, 120, tomllib.loads, _toml_text):
        path.write_text(text)
        _only((ManifestError,), lambda: load_manifest(path))
    for data in HOSTILE_BYTES:
        path.write_bytes(data)
        _only((ManifestError,), lambda: load_manifest(path))


@pytest.mark.parametrize(("field", "name"), [("file", "../../outside.ktir"), ("golden", "/etc/passwd"), ("npy", "a/../../b.npy")])
def test_conformance_manifest_paths_stay_in_the_suite(tmp_path: Path, field: str, name: str) -> None:
    from conformance.model import ManifestError, load_manifest

    case = {"id": "core.x", "level": "core", "file": "cases/core/x.ktir", "expect": "accept"}
    if field == "npy":
        case["args"] = [{"name": "a", "recipe": "npy", "npy": name}]  # type: ignore[list-item]
    else:
        case[field] = name
    path = tmp_path / "core.toml"
    path.write_text(_toml_text({"schema_version": 1, "level": "core", "case": [case]}))
    with pytest.raises(ManifestError, match="relative path inside the suite root"):
        load_manifest(path)


# ---------------------------------------------------------------- .npy arguments


class _Marker:
    """Unpickling this would create the file: proof that a load never unpickles."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.path,))


def _huge_header() -> bytes:
    """A .npy header claiming 10^11 float32 (400 GB): numpy allocates that before reading."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10**11,)})
    return header.getvalue()


def _npy_files(tmp_path: Path) -> dict[str, Path]:
    files = {}
    good = tmp_path / "good.npy"
    np.save(good, np.arange(4, dtype=np.float32))
    raw = good.read_bytes()
    for name, data in {"empty": b"", "magic-only": raw[:6], "truncated": raw[: len(raw) - 5], "garbage": b"hello world",
                       "header-garbage": raw[:10] + b"{'descr': 1}" + raw[22:]}.items():
        files[name] = tmp_path / f"{name}.npy"
        files[name].write_bytes(data)
    files["huge-shape"] = tmp_path / "huge-shape.npy"
    files["huge-shape"].write_bytes(_huge_header() + bytes(12))
    files["npz"] = tmp_path / "archive.npy"
    with files["npz"].open("wb") as f:
        np.savez(f, a=np.zeros(2))
    files["pickle"] = tmp_path / "pickle.npy"
    np.save(files["pickle"], np.array([_Marker(tmp_path / "UNPICKLED")], dtype=object), allow_pickle=True)
    return files


def test_bad_npy_files_raise_value_errors_and_never_unpickle(tmp_path: Path) -> None:
    from reference_interp.inputs import load_npy

    for name, path in _npy_files(tmp_path).items():
        with pytest.raises(ValueError, match=str(path.name)):
            load_npy(path)
        assert not (tmp_path / "UNPICKLED").exists(), name
    with pytest.raises(ValueError, match=r"\(100000000000,\) \(400,000,000,000 bytes\) but only 12 bytes"):
        load_npy(tmp_path / "huge-shape.npy")  # refused from its header, before any allocation
    pickle.loads(pickle.dumps(_Marker(tmp_path / "probe")))  # the probe is real: unpickling it creates its file
    assert (tmp_path / "probe").exists()


def test_run_with_a_bad_npy_argument_exits_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ktir.cli import main

    kernel = ROOT / "examples" / "vector_add.ktir"
    for name, path in _npy_files(tmp_path).items():
        code = main(["run", str(kernel), "--arg", f"A={path}"])
        err = capsys.readouterr().err
        assert code != 0 and "Traceback" not in err and path.name in err, (name, err)
    assert not (tmp_path / "UNPICKLED").exists()


@pytest.mark.parametrize("which", ["file", "golden"])
def test_a_suite_file_that_links_out_of_the_suite_is_refused_not_read(which: str) -> None:
    # a case file linked to /dev/zero was read for ever (the manifest's paths were confined,
    # the links they name were followed)
    import readers_gen
    from cli_case import CliCase, Link, run_cli

    file, _, _, case = readers_gen._suite_case()
    name = "suite/" + (file if which == "file" else case["golden"])
    files = {**readers_gen._one_case_suite(), name: Link("/dev/zero")}
    got, _, err = run_cli(CliCase(["conformance", "run", "--suite", "suite", "-q", "-k", readers_gen.ONE_CASE], files))
    assert got == 1 and "Traceback" not in err
    assert f"{name} leads outside suite (to /dev/zero)" in " ".join(err.split()), err


def test_an_npz_member_claiming_more_than_it_holds_is_refused(tmp_path: Path) -> None:
    """Outputs an implementation writes and program weights are .npz archives: a member whose
    header claims 400 GB is refused by its size in the archive before numpy allocates it."""
    import zipfile

    from conformance.values import read_npz

    path = tmp_path / "outputs.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("ok.npy", _npy_bytes(np.arange(3)))
        z.writestr("big.npy", _huge_header() + bytes(12))
    with pytest.raises(ValueError, match=r"\[big\]: its header says float32"):
        read_npz(path)
    np.savez_compressed(path, a=np.arange(6).reshape(2, 3), b=np.float32(2))
    got = read_npz(path)
    assert got["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and got["b"] == np.float32(2)


def _npy_bytes(a: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, a)
    return out.getvalue()

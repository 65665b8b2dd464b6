"""`ktir lower torch FILE.pt2 -o OUT.ktir` and `ktir run-program OUT.manifest.json`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import reference_interp  # noqa: E402
from ktir.cli import main  # noqa: E402
from ktir.lower.torch import Program  # noqa: E402
from tests.lower.torch.models import SwiGLU  # noqa: E402


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("pt2")
    model = SwiGLU(64, 128).eval()
    x = torch.randn(1, 32, 64)
    path = d / "mlp.pt2"
    torch.export.save(torch.export.export(model, (x,)), str(path))
    return path, model, x


def test_lower_torch_writes_ktir_manifest_weights(saved, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    path, model, x = saved
    out = tmp_path / "mlp.ktir"
    assert main(["lower", "torch", str(path), "-o", str(out), "-v"]) == 0
    assert "kernels" in capsys.readouterr().err
    assert out.read_text().count("func.func") == 4  # gate, up, silu*mul, down
    program = Program.load(tmp_path / "mlp.manifest.json", runner=reference_interp.run)
    assert program.manifest.ktir == "mlp.ktir" and program.manifest.weights == "mlp.weights.npz"
    got = program.run(x)
    with torch.no_grad():
        want = model(x).numpy()
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, float(np.abs(want).max()))

    np.save(tmp_path / "x.npy", x.numpy())
    result = tmp_path / "out.npz"
    assert main(["run-program", str(tmp_path / "mlp.manifest.json"), "--input", f"x={tmp_path / 'x.npy'}", "--out", str(result)]) == 0
    with np.load(result) as data:
        (name,) = data.files
        np.testing.assert_array_equal(data[name], got)


def test_bad_inputs_give_one_line_errors(saved, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not a zip file")
    assert main(["lower", "torch", str(bad), "-o", str(tmp_path / "o.ktir")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}: error[torch]:") and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "o.ktir").exists()
    assert main(["lower", "torch", str(tmp_path / "missing.pt2"), "-o", str(tmp_path / "o.ktir")]) == 2
    path, _, _ = saved
    capsys.readouterr()
    assert main(["lower", "torch", str(path), "-o", str(tmp_path / "nowhere" / "o.ktir")]) == 2
    assert capsys.readouterr().err == f"ktir lower torch: cannot write {tmp_path / 'nowhere' / 'o.ktir'}: no directory {tmp_path / 'nowhere'}\n"
    assert main(["run-program", str(tmp_path / "missing.manifest.json")]) == 2
    (tmp_path / "m.manifest.json").write_text('{"schema_version": 7}')
    assert main(["run-program", str(tmp_path / "m.manifest.json")]) == 1
    assert "schema_version" in capsys.readouterr().err


def test_run_program_needs_every_input(saved, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    path, _, _ = saved
    out = tmp_path / "p.ktir"
    assert main(["lower", "torch", str(path), "-o", str(out)]) == 0
    assert main(["run-program", str(tmp_path / "p.manifest.json")]) == 2
    assert "input x is missing" in capsys.readouterr().err
    assert main(["run-program", str(tmp_path / "p.manifest.json"), "--random-inputs", "1"]) == 0


def test_importing_ktir_lower_does_not_import_torch() -> None:
    code = "import sys, ktir.lower, ktir.lower.torch, ktir.cli; ktir.cli.build_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_run_program_with_a_replaced_kernel(saved, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    path, _, x = saved
    out = tmp_path / "p.ktir"
    assert main(["lower", "torch", str(path), "-o", str(out)]) == 0
    manifest = tmp_path / "p.manifest.json"
    first = Program.load(manifest).manifest.kernels[0].name
    text = out.read_text()
    start = text.index(f"func.func @{first}(")
    func = text[start : text.index("\n}\n", start) + 3]
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    np.save(tmp_path / "x.npy", x.numpy())
    # the kernel alone in its own file (as `ktir schedule --func` writes one) gives the same outputs
    alone = tmp_path / "alone.ktir"
    alone.write_text(header + "\n" + func)
    args = ["run-program", str(manifest), "--input", f"x={tmp_path / 'x.npy'}"]
    assert main([*args, "--out", str(tmp_path / "a.npz")]) == 0
    assert main([*args, "--kernel", f"{first}={alone}", "--out", str(tmp_path / "b.npz")]) == 0
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        np.testing.assert_array_equal(a[a.files[0]], b[b.files[0]])
    # a file that does not define the kernel, or defines it with other arguments
    other = tmp_path / "other.ktir"
    other.write_text(header + "\n" + func.replace(f"@{first}(", "@elsewhere("))
    assert main([*args, "--kernel", f"{first}={other}"]) == 1
    assert f"does not define @{first}" in capsys.readouterr().err
    renamed = tmp_path / "renamed.ktir"
    renamed.write_text(header + "\n" + func.replace("%in_x", "%in_y"))
    assert main([*args, "--kernel", f"{first}={renamed}"]) == 1
    assert "the program passes" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["not a zip", "zip without a program"])
def test_unreadable_pt2_prints_one_line_and_no_torch_traceback(tmp_path: Path, content: str) -> None:
    # torch logs a whole traceback for an archive it cannot read, through its own handler
    # (not the captured sys.stderr), so only a real process shows what a user sees
    import zipfile

    bad = tmp_path / "bad.pt2"
    if content == "not a zip":
        bad.write_bytes(b"garbage")
    else:
        with zipfile.ZipFile(bad, "w") as z:
            z.writestr("a.txt", "x")
    proc = subprocess.run(
        [sys.executable, "-m", "ktir.cli", "lower", "torch", str(bad), "-o", str(tmp_path / "o.ktir")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{bad}: error[torch]: not a torch.export program (")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("kind", ["not a zip", "another zip"])
def test_a_file_that_is_no_pt2_archive_is_refused_before_torch_is_imported(tmp_path: Path, kind: str) -> None:
    """Importing torch takes seconds: a file that cannot be a .pt2 (not a zip, or a zip such as
    an .npz without the PT2 archive's entries) is refused first."""
    bad = tmp_path / "weights.npz"
    if kind == "not a zip":
        bad.write_bytes(b"\x93NUMPY not an archive")
    else:
        np.savez(bad, a=np.zeros(4))
    code = (
        "import sys\nfrom ktir.cli import main\n"
        f"rc = main(['lower', 'torch', {str(bad)!r}, '-o', {str(tmp_path / 'o.ktir')!r}])\n"
        "print(rc, 'torch' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["1", "False"], (proc.stdout, proc.stderr)
    assert proc.stderr == f"{bad}: error[torch]: not a torch.export program (not a .pt2 archive)\n"


def test_lower_torch_reads_a_hugging_face_export(tmp_path: Path) -> None:
    # a Hugging Face model returns transformers' output classes; torch.export.load cannot rebuild them
    # in a process that has not imported transformers, which is what `ktir lower torch` is
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(vocab_size=64, n_embd=32, n_layer=1, n_head=2, n_positions=16, use_cache=False)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))
    saved = tmp_path / "gpt2.pt2"
    torch.export.save(torch.export.export(model, (ids,)), str(saved))
    out = tmp_path / "gpt2.ktir"
    proc = subprocess.run([sys.executable, "-m", "ktir.cli", "lower", "torch", str(saved), "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    got = Program.load(out.with_name("gpt2.manifest.json")).run(ids.numpy())
    with torch.no_grad():
        want = model(ids).logits.numpy()
    assert got.shape == want.shape and np.abs(got - want).max() <= 1e-4 * max(1.0, float(np.abs(want).max()))

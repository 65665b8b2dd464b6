"""The fuzz lane's machinery, and a short run of it.

The full CI lane (20,000 inputs, fixed seed) is its own step in `.ci/run`:
`python tests/fuzz/corpus_fuzz.py --inputs 20000 --seed 18 --jobs 2`. Here: a short run
with the same seed (so a regression usually shows up in the ordinary test run too), and
checks that the harness really catches what it claims to: an exception, a hang in Python
code, a hang the worker cannot interrupt, memory over the limit. Those use fork-inherited
monkeypatches of the worker's pipeline.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest

try:  # tests/ as a package, or this directory on sys.path (pytest's default)
    from . import corpus_fuzz as cf
except ImportError:
    import corpus_fuzz as cf  # type: ignore[no-redef]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the harness forks workers")

CI_SEED = 18


def test_corpus_is_the_repository_programs() -> None:
    files = cf.corpus_files()
    assert len(files) > 200
    assert all(p.suffix in (".ktir", ".mlir") for p in files)


def test_inputs_are_a_function_of_seed_and_index() -> None:
    corpus = cf.load_corpus()
    a = [cf.generate(corpus, 7, i) for i in range(50)]
    assert a == [cf.generate(corpus, 7, i) for i in range(50)]
    assert a != [cf.generate(corpus, 8, i) for i in range(50)]
    assert sum(text not in corpus for text in a) >= 45  # mutated, not copies


@pytest.mark.parametrize("mutator", [f for f, _ in cf.MUTATORS], ids=lambda f: f.__name__)
def test_every_mutator_changes_programs(mutator) -> None:  # type: ignore[no-untyped-def]
    import random

    corpus = cf.load_corpus()
    rng = random.Random(0)
    changed = sum(mutator(rng, text, corpus) != text for text in corpus[:60])
    assert changed >= 30


def test_short_lane_run_is_clean() -> None:
    report = cf.fuzz(600, seed=CI_SEED, jobs=2)
    assert report.inputs == 600 and sum(report.counts.values()) == 600
    assert report.failed == 0, report.summary() + "\n" + "\n".join(f"{i} {k}: {d[:2000]}" for i, k, d in report.failures[:5])
    # the mix reaches every stage: parse errors, verifier errors, clean kernels that run
    assert report.counts["parse-error"] and report.counts["invalid"] and report.counts["ran"]


def _patched(monkeypatch: pytest.MonkeyPatch, behaviour) -> None:  # type: ignore[no-untyped-def]
    """Inputs 0..9 are 'ok' except index 3, which gets `behaviour`."""
    monkeypatch.setattr(cf, "generate", lambda corpus, seed, index: "BAD" if index == 3 else "ok")

    def check(text: str, interpret: bool = True) -> str:
        if text == "BAD":
            behaviour()
        return "valid"

    monkeypatch.setattr(cf, "check", check)
    monkeypatch.setattr(cf, "_warm_up", lambda *args: None)


def _raise() -> None:
    raise ValueError("boom")


def _spin() -> None:
    # a hang in Python code burns CPU: the worker's CPU-time limit interrupts it
    end = time.monotonic() + 60
    while time.monotonic() < end:
        pass


def _sleep_unreachable() -> None:
    # the worker's timer signal is blocked (and sleeping uses no CPU): only the parent's
    # wall-clock watchdog can stop this
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGPROF])
    time.sleep(60)


def _allocate() -> None:
    block = bytearray(4 << 30)  # over the 1 GiB address-space limit the test sets
    del block


@pytest.mark.parametrize(
    ("behaviour", "kind", "detail"),
    [
        (_raise, "exception", "ValueError: boom"),
        (_spin, "hang", "interrupted by the time limit"),
        (_sleep_unreachable, "hang", "worker killed after the time limit"),
        (_allocate, "memory", "MemoryError"),
    ],
    ids=["exception", "hang", "hang-in-c", "memory"],
)
def test_harness_catches_and_saves(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, behaviour, kind: str, detail: str) -> None:  # type: ignore[no-untyped-def]
    _patched(monkeypatch, behaviour)
    started = time.monotonic()
    report = cf.fuzz(10, seed=1, jobs=2, time_limit=0.5, memory_limit=1 << 30, batch=4, mix={"corpus": 1})
    assert time.monotonic() - started < 30
    assert report.counts["valid"] == 9 and report.counts[kind] == 1, report.summary()
    [(index, got, text)] = report.failures
    assert (index, got) == (3, kind) and detail in text
    [path] = cf.save_failures(report, 1, tmp_path, {"corpus": 1})
    assert path.name.startswith(f"{kind}-") and path.read_text() == "BAD"
    assert "index 3" in path.with_suffix(".txt").read_text()


def test_located_errors_are_not_failures() -> None:
    assert cf.run_one("func.func @f( {")[0] == "parse-error"
    assert cf.run_one("func.func @f(%a: f32) -> f32 {\n  %b = arith.addi %a, %a : f32\n  return %b : f32\n}\n")[0] == "invalid"

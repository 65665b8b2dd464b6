"""The fuzz lane's machinery, and a short run of it.

The CI sample (20,000 inputs over every generator, fixed seed) is its own step in
`.ci/run`. Here: a short run with the same seed (so a regression usually shows up in the
ordinary test run too); that every generator reaches what it is for (every rule of the
grammar, every bound, every reader, every subcommand); and that the harness really catches
what it claims to: an exception, a hang in Python code, a hang the worker cannot interrupt,
memory over the limit, a traceback printed by a command. Those use fork-inherited
monkeypatches of the worker's pipeline.
"""

from __future__ import annotations

import mmap
import os
import signal
import sys
import time
from pathlib import Path

import pytest

try:  # tests/ as a package, or this directory on sys.path (pytest's default)
    from . import corpus_fuzz as cf
except ImportError:
    import corpus_fuzz as cf  # type: ignore[no-redef]
# the generators import each other as modules of this directory (corpus_fuzz puts it on sys.path)

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


def _describe(case: object) -> str:
    return case if isinstance(case, str) else case.describe() + repr(sorted(case.files.items(), key=repr))  # type: ignore[attr-defined]


def test_every_generator_is_a_function_of_seed_and_index() -> None:
    corpus = cf.load_corpus()
    for name in cf.GENERATORS:
        mix = {name: 1}
        a = [_describe(cf.make_case(corpus, 7, i, mix)[1]) for i in range(20)]
        assert a == [_describe(cf.make_case(corpus, 7, i, mix)[1]) for i in range(20)], name
        assert len(set(a)) >= 15, name  # and varied
    names = [cf.generator_of(3, i, cf.MIX) for i in range(2000)]
    assert {n: round(names.count(n) / 20) for n in cf.GENERATORS} == pytest.approx(
        {n: w * 100 / sum(cf.MIX.values()) for n, w in cf.MIX.items()}, abs=4)


def test_the_grammar_generator_reaches_every_rule() -> None:
    import random

    import grammar_gen

    used: set[tuple[str, int]] = set()
    for i in range(3000):
        grammar_gen.generate_text(random.Random(i), used=used)
    for i in range(200):
        grammar_gen.generate_text(random.Random(i), start="type_only", used=used)
    rules = grammar_gen.grammar().rules
    alternatives = {(r, i) for r, alts in rules.items() for i in range(len(alts))}
    assert {r for r, _ in used} == set(rules)
    assert len(used) >= 0.99 * len(alternatives), sorted(alternatives - used)


def test_the_limits_generator_reaches_both_sides_of_every_bound() -> None:
    import random

    from limits_gen import GENERATORS

    for generate, _ in GENERATORS:
        outcomes = {cf.run_one(generate(random.Random(i)))[0] for i in range(60)}
        assert not outcomes & set(cf.FAILURES), (generate.__name__, outcomes)
        if generate.__name__ == "strides":  # a bound of the interpreter: views that run, and that do not
            assert {"ran", "runtime-error"} <= outcomes, outcomes
        else:  # bounds of the parser: under them a program, over them a located error
            assert "parse-error" in outcomes and outcomes & {"invalid", "valid", "ran", "runtime-error"}, (generate.__name__, outcomes)


def test_the_command_line_generators_reach_every_subcommand_and_reader() -> None:
    import random

    import cli_gen
    import readers_gen

    seen = {" ".join(cli_gen.generate_cli(random.Random(i)).label.split()[3:]) for i in range(1500)}
    assert seen == set(cli_gen.all_commands())
    labels = {readers_gen.generate_reader(random.Random(i)).label for i in range(300)}
    assert len(labels) == len(readers_gen.READERS)


def test_a_traceback_of_a_command_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    from cli_case import CliCase

    import ktir.cli

    assert cf.run_one(CliCase(["validate", "k.ktir"], {"k.ktir": b"func.func @f() {\n  return\n}\n"}))[0] == "cli-ok"
    assert cf.run_one(CliCase(["validate", "missing.ktir"]))[0] == "cli-usage"

    def broken(argv: list[str]) -> int:
        raise IndexError("boom")

    monkeypatch.setattr(ktir.cli, "main", broken)
    outcome, detail = cf.run_one(CliCase(["validate", "k.ktir"]))
    assert outcome == "exception" and "IndexError: boom" in detail


@pytest.mark.parametrize("mutator", [f for f, _ in cf.MUTATORS], ids=lambda f: f.__name__)
def test_every_mutator_changes_programs(mutator) -> None:  # type: ignore[no-untyped-def]
    import random

    corpus = cf.load_corpus()
    rng = random.Random(0)
    changed = sum(mutator(rng, text, corpus) != text for text in corpus[:60])
    assert changed >= 30


def test_short_lane_run_is_clean() -> None:
    report = cf.fuzz(600, seed=CI_SEED, jobs=2)
    outcomes = {k: v for k, v in report.counts.items() if ":" not in k}
    assert report.inputs == 600 and sum(outcomes.values()) == 600
    assert report.failed == 0, report.summary() + "\n" + "\n".join(f"{i} {k}: {d[:2000]}" for i, k, d in report.failures[:5])
    # the mix reaches every stage: parse errors, verifier errors, clean kernels that run,
    # commands that succeed and that fail; and every generator
    assert report.counts["parse-error"] and report.counts["invalid"] and report.counts["ran"]
    assert report.counts["cli-ok"] and report.counts["cli-error"] and report.counts["cli-usage"]
    assert all(any(k.startswith(name + ":") for k in report.counts) for name in cf.GENERATORS)


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


def test_workers_are_recycled_without_losing_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker is replaced after RECYCLE_AFTER inputs; every input is still run once and
    the failing one still found."""
    _patched(monkeypatch, _raise)
    monkeypatch.setattr(cf, "RECYCLE_AFTER", 4)
    started: list[int] = []
    real = cf._Slot.__init__

    def counting(self, *args, **kw) -> None:  # type: ignore[no-untyped-def]
        started.append(1)
        real(self, *args, **kw)

    monkeypatch.setattr(cf._Slot, "__init__", counting)
    report = cf.fuzz(20, seed=1, jobs=2, batch=2, mix={"corpus": 1})
    assert report.counts["valid"] == 19 and report.counts["exception"] == 1, report.summary()
    assert [i for i, _, _ in report.failures] == [3]
    assert len(started) >= 5  # 2 workers, each replaced after every 4 inputs


def test_a_text_only_the_grammar_accepts_is_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    from ktir.syntax import fastparse, parser

    def refuse(*args, **kw):  # type: ignore[no-untyped-def]
        raise fastparse.Fallback

    monkeypatch.setattr(parser, "parse_fast", refuse)
    kind, detail = cf.run_one("func.func @f(%a: f32) -> f32 {\n  return %a : f32\n}\n", False)
    assert kind == "parser-disagree", (kind, detail)


def test_memory_growth_is_the_median_batch() -> None:
    """A steady leak is growth in every batch; one large input's kept peak is one step."""
    mb = 1 << 20
    assert cf.memory_growth([100 * mb + i * 8 * mb for i in range(9)], [250] * 8) == 8 * mb // 250
    assert cf.memory_growth([100 * mb] * 6 + [400 * mb] * 3, [250] * 8) == 0  # one input's peak, late in the life
    assert cf.memory_growth([100 * mb, 300 * mb, 500 * mb] + [500 * mb] * 6, [250] * 8) == 0  # a fresh worker's start
    assert cf.memory_growth([100 * mb, 200 * mb, 300 * mb], [250] * 2) is None  # too few batches to judge


_KEPT: list[mmap.mmap] = []


def test_a_leaking_worker_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker whose heap grows with every input (256 KiB kept per input here) is reported
    when it is recycled, while every input is still run."""
    monkeypatch.setattr(cf, "generate", lambda corpus, seed, index: "ok")

    def leaking(text: str, interpret: bool = True) -> str:
        # a fresh anonymous mapping, written: new resident pages even in a process (a pytest
        # worker, forked) whose allocator already holds resident free memory it would reuse
        block = mmap.mmap(-1, 256 << 10, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # not MAP_SHARED (shmem)
        block.write(os.urandom(256 << 10))
        _KEPT.append(block)
        return "valid"

    monkeypatch.setattr(cf, "check", leaking)
    monkeypatch.setattr(cf, "_warm_up", lambda *args: None)
    monkeypatch.setattr(cf, "RECYCLE_AFTER", 40)
    report = cf.fuzz(80, seed=1, jobs=2, batch=5, mix={"corpus": 1})
    assert report.counts["valid"] == 80
    assert report.counts["memory-growth"] >= 1 and report.failed >= 1, report.summary()
    assert all(kind == "memory-growth" and index == -1 for index, kind, _ in report.failures)

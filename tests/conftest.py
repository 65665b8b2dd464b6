"""Suite-wide settings: the `slow` marker (the quick lane is `-m "not slow"`), xdist groups
for modules with expensive module-scoped fixtures, and `--shuffle SEED` (random order).

`python -m pytest` runs the whole suite on every core (pytest-xdist, `-n auto` in
pyproject.toml); `python -m pytest -m "not slow"` is the quick lane for development;
`-n 0` runs in one process (for `-x`, `--pdb` or one test).
"""

from __future__ import annotations

import os
import random
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The slow tests: about 1% of the suite that takes most of its time (measured with
# `--durations`; each above about a second on an idle core). A file name marks every test
# in it; `file::name` marks one test function (all its parameters). The quick lane leaves
# them out; the full suite and CI run them.
SLOW = (
    "tests/cli/test_bad_cli_corpus.py::test_bad_command_line_gives_a_clean_error",  # a process per case
    "tests/cli/test_progress.py::test_lower_torch_shows_its_stages_with_the_elapsed_time",
    "tests/compat/test_validate_then_run.py::test_every_valid_program_compiles_in_the_interpreter",
    "tests/conformance/test_conformance_lockstep.py",
    "tests/conformance/test_conformance_persistent.py::test_the_example_server_passes_a_mixed_sample",
    "tests/conformance/test_conformance_runner.py::test_flipped_sign_is_caught_by_the_subf_cases",
    "tests/conformance/test_conformance_runner.py::test_parallel_run_keeps_suite_order_and_reports_timeouts",
    "tests/conformance/test_conformance_runner.py::test_reference_passes_every_case",
    "tests/conformance/test_conformance_runner.py::test_results_json_validates_against_the_published_schema",
    "tests/conformance/test_conformance_runner.py::test_subprocess_adapter_catches_a_wrong_program_and_honours_exit_77",
    "tests/conformance/test_conformance_runner.py::test_subprocess_adapter_end_to_end",
    "tests/conformance/test_conformance_runner.py::test_worked_example_wrapper_runs_ktir_run",
    "tests/conformance/test_conformance_runner.py::test_wrong_rounding_is_caught_by_exact_cases_only",
    "tests/conformance/test_conformance_suite.py::test_stored_suite_is_what_the_generators_make",
    "tests/conformance/test_conformance_vendor.py::test_a_vendor_with_one_wrong_behaviour_is_not_certified_at_its_level",
    "tests/dialects/test_typed_constraints.py::test_rewording_every_doc_string_changes_no_diagnostic",
    "tests/docs/test_docs_site.py",  # builds the whole site (mkdocs) and drives a browser
    "tests/docs/test_guides.py::test_a_guides_commands_run_and_print_what_it_shows",
    "tests/fuzz/test_fuzz_lane.py::test_harness_catches_and_saves",
    "tests/fuzz/test_fuzz_lane.py::test_short_lane_run_is_clean",
    "tests/fuzz/test_user_inputs.py::test_mutated_conformance_manifests_give_manifest_errors",
    "tests/interop/test_mlir_interop.py",  # mlir-opt-22 over every program
    "tests/interp/test_race_oracle.py::test_tracker_reports_exactly_the_races_of_the_oracle",
    "tests/lower/test_samples.py::test_bundle_steps_present_run_in_order_with_lx_carried",
    "tests/lower/test_samples.py::test_every_lowered_sample_runs_with_random_inputs",
    "tests/lower/test_samples.py::test_restickify_matches_numpy",
    "tests/lower/torch/test_cli.py",
    "tests/lower/torch/test_conv.py",
    "tests/lower/torch/test_decoder.py",
    "tests/lower/torch/test_fit.py",
    "tests/lower/torch/test_int_ops.py::test_random_integer_chains_are_exact",
    "tests/lower/torch/test_ops_moe_ssm.py",
    "tests/lower/torch/test_routing_ops.py",
    "tests/lower/torch/test_sdsc.py::test_decoder_layer_sdsc_kernels_agree",
    "tests/lower/torch/test_transformers.py",
    "tests/schedulers/test_random_kernels.py::test_every_schedule_of_a_random_kernel_is_right",
    "tests/schedulers/test_sched_attention_gqa.py::test_random_shapes_and_schedules_are_equivalent",
    "tests/schedulers/test_sched_examples.py::test_example",
    "tests/schedulers/test_sched_layouts.py::test_random_layouts_schedule_to_equal_results",
    "tests/schedulers/test_sched_legality.py::test_random_row_loop_kernels_are_declined_or_scheduled_right",
    "tests/schedulers/test_sched_lowered.py",
    "tests/schedulers/test_sched_natural.py::test_random_natural_kernels_are_scheduled_exactly_when_legal_and_right",
    "tests/schedulers/test_sched_pictures.py::test_picture_is_current",
    "tests/schedulers/test_sched_ring_matmul.py",
    "tests/schedulers/test_sched_row_timeline.py::test_decode_rmsnorm_splits_its_columns_exactly_when_that_pays",
    "tests/schedulers/test_sched_scratch_timeline.py::test_the_ring_combine_is_counted_as_the_timeline_holds_it",
    "tests/schedulers/test_sched_row_timeline.py::test_double_buffered_rows_stay_equal",
    "tests/schedulers/test_sched_rows.py::test_random_row_kernels_schedule_to_equal_results",
    "tests/spec/test_error_ids.py::test_every_runtime_kind_the_interpreter_raises_is_declared_and_every_declared_kind_is_raised",
    "tests/spec/test_error_ids.py::test_every_verifier_id_is_in_the_spec_and_the_reverse",
    "tests/syntax/test_comments_blank_lines.py::test_blank_lines_keeps_what_the_line_rule_keeps",
    "tests/syntax/test_fastparse_equivalence.py::test_every_line_with_a_stray_tail",
    "tests/syntax/test_fastparse_equivalence.py::test_generated_programs",
    "tests/syntax/test_fastparse_equivalence.py::test_mutated_programs",
    "tests/syntax/test_tables.py",  # rebuilds the LALR tables several times
    "tests/targets/test_access_spans.py::test_spans_are_sound",
    "tests/targets/test_outputs.py::test_trace_of_a_real_run_finds_every_tile",
    "tests/targets/test_properties.py",
    "tests/targets/test_shapes_only.py::test_scheduled_kernels_trace_the_same",
    "tests/targets/test_shapes_only.py::test_shared_panels_trace_the_same",
    "tests/test_affine_linear.py::test_linear_form_evaluates_like_the_expression",
    "tests/test_roundtrip_property.py::test_generator_covers_every_op",
    "tests/test_roundtrip_property.py::test_print_parse_roundtrip",
    "tests/test_roundtrip_property.py::test_roundtrip_fixed_seeds",
    "tests/torch_backend/test_static_state.py",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--shuffle", metavar="SEED", default=None,
        help="run the test files in a random order and each file's tests in a random order (an integer seed, "
        "or 'random'); tests must pass in any order",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: one of the ~1% of tests that take most of the suite's time; "
                            "the quick lane is -m 'not slow'")
    seed = config.getoption("--shuffle")
    if seed == "random":
        # every xdist worker must collect the same order: the controller picks the seed once
        seed = os.environ.setdefault("KTIR_TEST_SHUFFLE_SEED", str(random.SystemRandom().randrange(10**6)))
    if seed is not None:
        try:
            config.stash[_SEED] = int(seed)
        except ValueError:
            raise pytest.UsageError(f"--shuffle takes an integer seed or 'random', not {seed!r}") from None


_SEED = pytest.StashKey[int]()


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = config.stash.get(_SEED, None)
    return None if seed is None else f"test order shuffled with seed {seed} (repeat it with --shuffle {seed})"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The seed again at the end, where a failure is read (and shown with -q, unlike the header)."""
    seed = config.stash.get(_SEED, None)
    if seed is not None:
        terminalreporter.write_line(f"test order shuffled with seed {seed} (repeat it with --shuffle {seed})")


def _rel(item: pytest.Item) -> str:
    path = Path(str(item.path)).resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    files = {_rel(item) for item in items}
    matched: set[str] = set()
    for item in items:
        path = _rel(item)
        name = f"{path}::{getattr(item, 'originalname', item.name)}"
        for key in (path, name):
            if key in SLOW:
                item.add_marker(pytest.mark.slow)
                matched.add(key)
        if _module_scoped(item):
            # one worker runs the whole module, so its module-scoped fixture is built once
            item.add_marker(pytest.mark.xdist_group(path))
    # a listed test that no longer exists (renamed) would silently join the quick lane;
    # checked when whole files were collected (no `file::test` arguments)
    whole_files = not any("::" in arg for arg in config.args)
    stale = [key for key in SLOW if whole_files and key.split("::")[0] in files and key not in matched]
    if stale:
        raise pytest.UsageError(f"tests/conftest.py SLOW names tests that do not exist: {', '.join(stale)}")
    seed = config.stash.get(_SEED, None)
    if seed is not None:
        _shuffle(items, seed)


def _module_scoped(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


def _shuffle(items: list[pytest.Item], seed: int) -> None:
    """Files in a random order, each file's tests in a random order (a file's tests stay
    together, so module-scoped fixtures are still built once per file)."""
    rng = random.Random(seed)
    by_file: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        by_file[str(item.path)].append(item)
    order = list(by_file)
    rng.shuffle(order)
    items[:] = []
    for path in order:
        group = by_file[path]
        rng.shuffle(group)
        items.extend(group)


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(autouse=True, scope="session")
def _private_schedule_cache(tmp_path_factory: pytest.TempPathFactory):
    """Schedules cached by any test (and by the CLI runs tests start) go to a temporary
    directory, never into the user's cache directory."""
    before = os.environ.get("KTIR_SCHEDULE_CACHE")
    os.environ["KTIR_SCHEDULE_CACHE"] = str(tmp_path_factory.mktemp("schedule-cache"))
    yield
    if before is None:
        os.environ.pop("KTIR_SCHEDULE_CACHE", None)
    else:
        os.environ["KTIR_SCHEDULE_CACHE"] = before

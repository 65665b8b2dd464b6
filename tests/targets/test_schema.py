"""Target descriptions: the built-in files, provenance rules, validation errors, the published JSON Schema."""

from __future__ import annotations

import copy
import json

import pytest

from ktir.targets import TargetError, builtin_targets, load_target, parse_target
from ktir.targets.loader import target_from_dict
from ktir.targets.schema import SCHEMA_PATH, iter_quantities, json_schema, json_schema_text

from .helpers import BASE, bw, q, toy


def test_builtin_targets_load():
    names = builtin_targets()
    assert {"spyre", "wormhole-n150"} <= set(names)
    for name in names:
        t = load_target(name)
        assert t.name == name


def test_every_number_of_every_builtin_target_has_provenance():
    for name in builtin_targets():
        t = load_target(name)
        quantities = iter_quantities(t)
        assert len(quantities) > 20
        for path, quantity in quantities:
            assert (quantity.source is None) != (quantity.assumption is None), path


def test_the_formats_is_vendor_neutral():
    topologies = {load_target(n).interconnect.topology for n in builtin_targets()}
    assert {"ring", "mesh2d"} <= topologies


def test_public_spyre_figures():
    t = load_target("spyre")
    assert t.tiles.count.value == 32
    assert t.interconnect.topology == "ring" and t.interconnect.bidirectional
    assert t.interconnect.link_bandwidth.value == 128 and t.interconnect.link_bandwidth.unit == "B/cycle"
    assert t.local_memory.capacity_bytes.value == 2 * 1024 * 1024
    assert t.global_memory.bandwidth.value == 200e9 and t.global_memory.bandwidth.unit == "B/s"
    assert t.global_memory.capacity_bytes.value == 128 * 2**30
    assert t.global_memory.granularity_bytes.value == 128
    assert t.power_watts is not None and t.power_watts.value == 75
    assert set(t.dtypes) == {"f16", "f8", "i8", "i4"}
    pt = next(u for u in t.compute_units if u.kind == "systolic")
    assert pt.shape.value == [8, 8] and pt.count.value == 2
    # the figures that are not public are marked as assumptions
    assert t.clock.hz.assumption is not None
    assert all(r.assumption is not None for r in pt.macs_per_cycle.values())


@pytest.mark.parametrize("name", ["spyre", "wormhole-n150"])
def test_derived_peak_reaches_the_vendor_headline(name):
    t = load_target(name)
    assert t.headline_ops_per_second is not None
    peak = max(2 * t.peak_macs_per_cycle(d) * t.clock_hz for d in t.dtypes)
    assert peak >= t.headline_ops_per_second.value
    assert peak <= 1.1 * t.headline_ops_per_second.value  # derived from it, not far above


def test_spyre_clock_derivation():
    t = load_target("spyre")
    i8_per_cycle = t.peak_macs_per_cycle("i8")
    assert i8_per_cycle == 32 * 2 * 2048
    lowest = t.headline_ops_per_second.value / (2 * i8_per_cycle)
    assert lowest == pytest.approx(1.144e9, rel=1e-3)
    assert lowest <= t.clock_hz <= 1.5e9  # rounded up, below the 14 nm prototype's 1.5 GHz


def errors_of(data: dict) -> str:
    with pytest.raises(TargetError) as info:
        target_from_dict(data, "t.toml")
    return str(info.value)


def test_a_number_needs_exactly_one_provenance():
    data = copy.deepcopy(BASE)
    data["clock"]["hz"] = {"value": 1e9}
    assert "exactly one of `source`" in errors_of(data)
    data["clock"]["hz"] = {"value": 1e9, "source": "x", "assumption": "test"}
    assert "exactly one of `source`" in errors_of(data)


def test_citations_must_exist_and_declarations_must_be_cited():
    data = copy.deepcopy(BASE)
    data["clock"]["hz"] = {"value": 1e9, "source": "nowhere"}
    assert "clock.hz: source 'nowhere' is not in [sources]" in errors_of(data)
    data = copy.deepcopy(BASE)
    data["sources"] = {"unused": {"title": "A document nobody cites"}}
    assert "never cited: unused" in errors_of(data)


def test_unknown_fields_and_versions_are_rejected():
    data = copy.deepcopy(BASE)
    data["clock"]["mhz"] = q(1000)
    assert "clock.mhz" in errors_of(data)
    data = copy.deepcopy(BASE)
    data["schema_version"] = 2
    assert "this reader knows version 1" in errors_of(data)
    data.pop("schema_version")
    assert "schema_version is missing" in errors_of(data)


def test_structural_rules():
    data = copy.deepcopy(BASE)
    data["memory"] = data["memory"][:1]
    assert "exactly one memory level of scope ct_local" in errors_of(data)
    data = copy.deepcopy(BASE)
    data["memory"][0]["attach_tiles"] = q([9])
    assert "[9] are not tiles" in errors_of(data)
    data = copy.deepcopy(BASE)
    data["interconnect"] = {"topology": "mesh2d", "shape": q([3, 3]), "wraparound": False, "link_bandwidth": bw(8),
                            "hop_latency_cycles": q(1)}
    assert "does not hold 4 tiles" in errors_of(data)
    data = copy.deepcopy(BASE)
    data["interconnect"] = {"topology": "torus3d"}
    assert "interconnect" in errors_of(data)
    data = copy.deepcopy(BASE)
    data["compute_units"][0]["macs_per_cycle"] = {"f17": q(1)}
    assert "f17" in errors_of(data)


def test_parse_errors_name_the_file():
    with pytest.raises(TargetError, match="bad.toml: not valid TOML"):
        parse_target("name = ", "bad.toml")
    with pytest.raises(TargetError, match="unknown target 'nope'"):
        load_target("nope")


def test_a_target_file_by_path(tmp_path):
    text = (SCHEMA_PATH.parent / "spyre.toml").read_text().replace('name = "spyre"', 'name = "my-spyre"')
    path = tmp_path / "mine.toml"
    path.write_text(text)
    assert load_target(str(path)).name == "my-spyre"


def test_published_json_schemas_are_up_to_date():
    from ktir.targets.report import REPORT_SCHEMA_PATH, report_schema_text

    for path, text in ((SCHEMA_PATH, json_schema_text()), (REPORT_SCHEMA_PATH, report_schema_text())):
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run `python -m ktir.targets.gen_schema`"


def test_builtin_targets_validate_against_the_published_json_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    import tomllib

    for path in builtin_targets().values():
        jsonschema.validate(tomllib.loads(path.read_text(encoding="utf-8")), schema)
    bad = copy.deepcopy(BASE)
    bad["tiles"]["count"]["value"] = -1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


@pytest.mark.parametrize("which", ["target", "report"])
def test_json_schema_documents_every_field(which):
    from ktir.targets.report import report_schema_text

    schema = json_schema() if which == "target" else json.loads(report_schema_text())

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for name, prop in node.get("properties", {}).items():
                assert prop.get("description"), name
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)


def test_toy_helper_changes_fields():
    assert toy(**{"tiles.count": q(4)}).tiles.count.value == 4

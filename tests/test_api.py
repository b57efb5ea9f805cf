"""The Python API: scenarios, runs, results and errors."""

from __future__ import annotations

import json
import tomllib

import pytest
import vcpusim
from conftest import SMALL_SCENARIO, VM_COLUMNS, run_cli


@pytest.fixture
def small():
    return vcpusim.Scenario(SMALL_SCENARIO, "small.toml")


def test_error_classes_form_one_hierarchy():
    for cls in (vcpusim.ScenarioError, vcpusim.DeadlockError, vcpusim.LimitError, vcpusim.InternalError):
        assert issubclass(cls, vcpusim.VcpusimError)
    assert issubclass(vcpusim.VcpusimError, Exception)


def test_a_rust_panic_becomes_internal_error_with_its_message():
    with pytest.raises(vcpusim.InternalError, match="the sky fell") as caught:
        vcpusim._core._panic_for_test("the sky fell")
    # An `except Exception` handler catches it (pyo3's PanicException would escape it).
    assert isinstance(caught.value, Exception)
    assert "lib.rs" in str(caught.value), "the message says where the panic happened"
    # The extension is still usable after the panic.
    assert json.loads(vcpusim._core.catalog())["policies"]


def test_scenario_summary(small):
    assert small.info["pcpus"] == 4
    assert small.policy == "cfs"
    assert small.vm_names == ["parallel", "seq-0", "seq-1"]
    assert small.duration_ns == 200_000_000
    assert small.seed == 1


def test_from_toml_names_the_file_in_errors(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text(SMALL_SCENARIO.replace("vcpus = 4", "vcpus = 0"))
    with pytest.raises(vcpusim.ScenarioError, match=r"broken\.toml.*vm\[0\]\.vcpus"):
        vcpusim.Scenario.from_toml(path)
    with pytest.raises(vcpusim.ScenarioError, match="no such scenario file"):
        vcpusim.Scenario.from_toml(tmp_path / "absent.toml")
    # Not a path at all: a TypeError naming the argument, not pathlib's.
    with pytest.raises(TypeError, match=r"^from_toml: path: expected a file path \(str or os\.PathLike\), got int 123$"):
        vcpusim.Scenario.from_toml(123)
    # The TOML text itself, a likely slip: said so, and where the text goes.
    with pytest.raises(vcpusim.ScenarioError, match=r"got TOML text, not a file path: give the text to vcpusim\.Scenario\(text\)"):
        vcpusim.Scenario.from_toml(SMALL_SCENARIO)
    # ... also when the text is longer than a file name may be (the open fails as "name too long").
    long_text = SMALL_SCENARIO + "\n# " + "x" * 300 + "\n"
    with pytest.raises(vcpusim.ScenarioError, match=r"^from_toml: path: got TOML text, not a file path"):
        vcpusim.load(long_text)
    assert vcpusim.Scenario(SMALL_SCENARIO).info["pcpus"] > 0, "what the message advises loads"


def test_from_dict_matches_the_toml_file(small):
    assert vcpusim.Scenario.from_dict(tomllib.loads(SMALL_SCENARIO)).source == "<python>"
    from_dict = vcpusim.Scenario.from_dict(tomllib.loads(SMALL_SCENARIO), source="small.toml")
    assert from_dict.info == small.info
    assert vcpusim.run(from_dict).files() == vcpusim.run(small).files()


def test_run_and_run_many_take_a_dict_of_tables_and_name_a_wrong_type(small, tmp_path):
    data = tomllib.loads(SMALL_SCENARIO)
    want = vcpusim.run(vcpusim.Scenario.from_dict(data)).files()
    assert vcpusim.run(data).files() == want
    assert [r.files() for r in vcpusim.run_many([data], processes=1, out_dir=tmp_path / "s")] == [want]
    with pytest.raises(TypeError, match="expected a Scenario, a dict of scenario tables or a scenario file path, got int"):
        vcpusim.run(42)


def test_samples_are_the_cpu_usage_time_series(small):
    assert small.info["pcpus"] == 4 and small.duration_ns == 200_000_000
    assert vcpusim.run(small).samples.empty
    sampled = small.replace(sample_every="50ms")
    res = vcpusim.run(sampled)
    s = res.samples
    assert list(s.columns) == ["vm", "t_s", "pcpu_time_ms", "share"]
    assert sorted(s["vm"].unique()) == sorted(small.vm_names)
    assert list(s[s["vm"] == "parallel"]["t_s"]) == [0.05, 0.1, 0.15, 0.2]
    # The last sample is the run's CPU time; the shares over the run average to cpu_share.
    for vm, rows in s.groupby("vm"):
        row = res.vms.set_index("vm").loc[vm]
        assert rows["pcpu_time_ms"].iloc[-1] == pytest.approx(row["cpu_time_ms"], abs=0.01)
        assert rows["share"].mean() == pytest.approx(row["cpu_share"], abs=1e-3)
    # Sampling leaves every other output as it was.
    assert res.vms_csv == vcpusim.run(small).vms_csv


def test_from_dict_errors_are_the_loaders(small):
    data = small.to_dict()
    data["host"]["pcpus"] = 0
    with pytest.raises(vcpusim.ScenarioError, match=r"my-sweep: host\.pcpus"):
        vcpusim.Scenario.from_dict(data, source="my-sweep")
    with pytest.raises(vcpusim.ScenarioError, match="cannot be written as TOML"):
        vcpusim.Scenario.from_dict({"host": {"pcpus": None}})


def test_replace_helpers(small):
    credit = small.with_policy("credit")
    assert credit.policy == "credit" and small.policy == "cfs"
    assert small.with_seed(42).seed == 42
    assert small.with_duration("50ms").duration_ns == 50_000_000
    assert small.replace(pcpus=8).info["pcpus"] == 8
    with pytest.raises(vcpusim.ScenarioError, match="host.params"):
        small.with_policy("cfs", no_such_param=1)


def test_result_dataframes_and_summary(small):
    result = vcpusim.run(small, seed=5)
    assert [c for c in result.vms.columns if c in VM_COLUMNS] == VM_COLUMNS
    assert list(result.vms["vm"]) == ["parallel", "seq-0", "seq-1"]
    assert result.vms["cpu_time_ms"].dtype.kind == "f"
    assert result.vms["lhp_count"].dtype.kind == "i"
    assert len(result.metrics) > 0 and "vm" in result.metrics.columns
    assert result.summary["events"] > 0
    assert result.trace is None


def test_same_seed_same_bytes_other_seed_other_results(small):
    a, b, c = vcpusim.run(small, seed=11), vcpusim.run(small, seed=11), vcpusim.run(small, seed=12)
    assert a.files() == b.files()
    assert (a.vms_csv, a.metrics_csv) != (c.vms_csv, c.metrics_csv)


def test_seed_argument_overrides_the_scenario_seed(small):
    assert vcpusim.run(small, seed=9).files() == vcpusim.run(small.with_seed(9)).files()


def test_write_produces_exactly_the_cli_files(small, tmp_path):
    scenario_path = tmp_path / "small.toml"
    scenario_path.write_text(SMALL_SCENARIO)
    api_result = vcpusim.run(vcpusim.Scenario.from_toml(scenario_path), seed=4, trace=True)
    api_result.write(tmp_path / "api")
    done = run_cli("run", scenario_path, "--out", tmp_path / "cli", "--seed", "4", "--trace", "--quiet")
    assert done.returncode == 0, done.stderr
    for name in ("vms.csv", "metrics.csv", "summary.json", "trace.json"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert vcpusim.Result.read(tmp_path / "api") == api_result


def test_check_mode_runs_clean(small):
    assert vcpusim.run(small.with_duration("50ms"), check=True).summary["events"] > 0


def test_event_budget_raises_limit_error(small):
    with pytest.raises(vcpusim.LimitError):
        vcpusim.run(small.replace(max_events=10))


def test_catalog_lists_policies_and_workloads():
    catalog = vcpusim.catalog()
    assert {"cfs", "credit"} <= {p["name"] for p in catalog["policies"]}
    assert {"barrier", "cpu-bound"} <= {w["name"] for w in catalog["workloads"]}


#: TOML 1.1 forms the Rust loader reads: a trailing comma and newlines in an inline table, \x escapes.
TOML_11 = SMALL_SCENARIO.replace('[run]\nduration = "200ms"', '[run]\nduration = "\\x32\\x30\\x30ms"').replace(
    'workload = "barrier"\n', 'workload = "barrier"\nparams = {\n  work = "1ms",\n}\n'
)


def test_to_dict_and_replace_read_every_form_the_loader_reads():
    scenario = vcpusim.Scenario(TOML_11, "toml11.toml")
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads(TOML_11)  # Python's own parser reads TOML 1.0 only
    data = scenario.to_dict()
    assert data["run"]["duration"] == "200ms"
    assert data["vm"][0]["params"] == {"work": "1ms"}
    assert scenario.replace(seed=7).seed == 7
    assert scenario.with_policy("credit").policy == "credit"


def test_to_dict_is_a_fresh_copy(small):
    data = small.to_dict()
    data["host"]["pcpus"] = 99
    assert small.to_dict()["host"]["pcpus"] == 4


@pytest.mark.parametrize("call, error, message", [
    (lambda s: vcpusim.run(s, seed=-1), ValueError, "run: seed: expected an integer from 0 to 18446744073709551615, got -1"),
    (lambda s: vcpusim.run(s, seed=2**64), ValueError, "run: seed: expected an integer from 0 to 18446744073709551615, got 18446744073709551616"),
    (lambda s: vcpusim.run(s, seed="3"), TypeError, "run: seed: expected an integer .* got str '3'"),
    (lambda s: vcpusim.run(s, trace=1), TypeError, "run: trace: expected True or False, got int 1"),
    (lambda s: vcpusim.run(s, trace_max_events=0), ValueError, r"run: trace_max_events: expected a positive integer below 2\*\*64, got int 0"),
    (lambda s: s.replace(params=5), TypeError, r"replace: params: expected a dict of \[host.params\] keys to values, got int 5"),
    (lambda s: s.replace(policy=3), TypeError, "replace: policy: expected a policy name"),
    (lambda s: s.replace(seed=-2), ValueError, "replace: seed: expected an integer"),
    (lambda s: s.replace(duration=5), TypeError, 'replace: duration: expected a duration with a unit such as "2s", got int 5'),
    (lambda s: s.replace(pcpus="8"), TypeError, "replace: pcpus: expected an integer, got str '8'"),
    (lambda s: vcpusim.Scenario.from_dict([1]), TypeError, "from_dict: data: expected a dict of scenario tables, got list"),
])
def test_api_argument_errors_name_the_argument(small, call, error, message):
    with pytest.raises(error, match=message):
        call(small)


def test_a_none_in_from_dict_names_its_key(small):
    data = small.to_dict()
    data["vm"][1]["vcpus"] = None
    with pytest.raises(vcpusim.ScenarioError, match=r"my-sweep: vm\[1\]\.vcpus: None cannot be written as TOML"):
        vcpusim.Scenario.from_dict(data, source="my-sweep")


def test_override_sets_dotted_keys_with_the_loaders_validation(small):
    changed = small.override({"host.policy": "credit", "vm.parallel.vcpus": 2, "vm.seq.params.chunk": "2ms"})
    data = changed.to_dict()
    assert changed.policy == "credit"
    assert data["vm"][0]["vcpus"] == 2 and data["vm"][1]["params"] == {"chunk": "2ms"}
    assert small.override({"vm.1.vcpus": 2}).to_dict()["vm"][1]["vcpus"] == 2
    assert small.override({"run.duration": "50ms"}).duration_ns == 50_000_000
    with pytest.raises(vcpusim.ScenarioError, match=r"small.toml: vm\[0\]\.vcpus: expected an integer of at least 1, got 0 \(after override vm.parallel.vcpus=0\)"):
        small.override({"vm.parallel.vcpus": 0})
    with pytest.raises(vcpusim.ScenarioError, match=r"override vm.nope.vcpus: no \[\[vm\]\] entry named 'nope' \(entries: parallel, seq"):
        small.override({"vm.nope.vcpus": 1})
    with pytest.raises(vcpusim.ScenarioError, match=r"override host.pcpus.x: host.pcpus is a value \(4\), not a table"):
        small.override({"host.pcpus.x": 1})


def test_vms_iterations_is_a_nullable_integer(quickstart):
    vms = vcpusim.run(vcpusim.Scenario.from_toml(quickstart).with_duration("300ms")).vms.set_index("vm")
    assert str(vms["iterations"].dtype) == "Int64"
    assert vms.loc["parallel", "iterations"] == 2000
    assert vms["iterations"].isna().sum() == 4  # the seq VMs have no target


def test_version_is_the_packages():
    from importlib.metadata import version

    assert vcpusim.__version__ == version("vcpusim")


def test_the_package_ships_type_information():
    from importlib.resources import files

    package = files("vcpusim")
    assert package.joinpath("py.typed").is_file()
    stub = package.joinpath("_core.pyi").read_text()
    for name in ("def run(", "def tables(", "def load(", "__version__", "class ScenarioError"):
        assert name in stub, name


def test_summary_numbers_are_json_numbers(small):
    summary = vcpusim.run(small).summary
    assert isinstance(summary["host_busy_share"], float) and 0 < summary["host_busy_share"] <= 1
    assert summary["host_busy_share"] == round(summary["host_busy_share"], 4)


def test_bench_times_the_scenario_it_is_given(small):
    report = vcpusim.bench(memory=False, repeats=1, scenario=small)
    assert report["scenario"] == "small.toml"
    assert report["events"] > 0 and report["sim_time_ns"] > 0
    assert report["scenario"] != vcpusim.bench(memory=False, repeats=1, duration="10ms")["scenario"]


def test_bench_refuses_what_is_not_a_scenario():
    with pytest.raises(TypeError, match="expected a vcpusim.Scenario, got str"):
        vcpusim.bench(memory=False, scenario="scenarios/quickstart.toml")
    with pytest.raises(vcpusim.VcpusimError, match="scaling_repeats"):
        vcpusim.bench(memory=False, scaling=True, scaling_repeats=0)
    with pytest.raises(vcpusim.VcpusimError, match="repeats: got 0"):
        vcpusim.bench(memory=False, repeats=0)
    with pytest.raises(vcpusim.VcpusimError, match="repeats: got 2.5"):
        vcpusim.bench(memory=False, repeats=2.5)


def test_api_mistakes_are_answered_at_the_call_naming_the_argument(small, tmp_path, monkeypatch):
    import pandas as pd

    data = tomllib.loads(SMALL_SCENARIO)
    # Self-referential and absurdly deep data: a ScenarioError with the path, not a RecursionError.
    looped = dict(data)
    looped["host"] = dict(data["host"], loop=looped)
    with pytest.raises(vcpusim.ScenarioError, match=r"host\.loop: contains itself"):
        vcpusim.Scenario.from_dict(looped)
    deep: dict = {}
    cur = deep
    for _ in range(5000):
        cur["a"] = {}
        cur = cur["a"]
    with pytest.raises(vcpusim.ScenarioError, match=f"nested more than {vcpusim.api.MAX_NESTING}"):
        vcpusim.Scenario.from_dict(dict(data, x=deep))
    # The same table in two places is no loop.
    shared = {"x": 1}
    assert vcpusim.api._shape_problem({"a": [shared, shared], "b": shared}) is None
    # A lone surrogate in the text: the source, the line and the character.
    with pytest.raises(vcpusim.ScenarioError, match=r"s\.toml: text: line 2: '\\ud800' is a lone surrogate"):
        vcpusim.Scenario("[host]\n# \ud800\npcpus = 2\n", "s.toml")
    with pytest.raises(TypeError, match="Scenario: text: expected the TOML text as a str, got bytes"):
        vcpusim.Scenario(b"[host]\npcpus = 2\n")
    # Folder arguments of the wrong type or empty, named.
    for call, param in [(lambda out: vcpusim.run_many([small], out_dir=out, progress=False), "out_dir"),
                        (lambda out: vcpusim.sweep_cases([({}, small)], out=out, progress=False), "out"),
                        (lambda out: vcpusim.run(small).write(out), "Result.write: directory")]:
        with pytest.raises(TypeError, match=f"{param}: expected a folder path .* got int 5"):
            call(5)
        with pytest.raises(TypeError, match=f"{param}: expected a folder path"):
            call(b"out")
        monkeypatch.chdir(tmp_path)
        with pytest.raises(ValueError, match=f"{param}: empty folder path"):
            call("")
        assert list(tmp_path.iterdir()) == [], "nothing was written into the current folder"
    # The table helpers on wrong types.
    with pytest.raises(TypeError, match="tidy: labelled: expected .* got int 5"):
        vcpusim.tidy(5)
    with pytest.raises(TypeError, match=r"tidy: labelled\[0\]: expected a \(labels dict, Result\) pair"):
        vcpusim.tidy([small])
    with pytest.raises(TypeError, match="aggregate: df: expected a pandas DataFrame"):
        vcpusim.aggregate(5, ["a"], ["b"])
    with pytest.raises(TypeError, match="aggregate: by: expected a list of column names, got str"):
        vcpusim.aggregate(pd.DataFrame({"a": [1]}), "a", ["a"])
    with pytest.raises(KeyError, match="aggregate: values: no column 'b'"):
        vcpusim.aggregate(pd.DataFrame({"a": [1]}), ["a"], ["b"])

"""Policies written in Python (python/vcpusim/policy.py, crates/vcpusim-py/src/python_policy.rs):
run three ways, checked as every policy is, their errors surfaced with the user's traceback,
deterministic, and re-imported by worker processes."""

from __future__ import annotations

import io
import sys
import traceback

import pytest
import vcpusim
from conftest import REPO, SMALL_SCENARIO

sys.path.insert(0, str(REPO / "examples" / "policies"))
import round_robin  # noqa: E402
from round_robin import RoundRobin  # noqa: E402

#: Four always-runnable single-vCPU VMs on two pCPUs: round robin gives each half a pCPU.
FOUR_ON_TWO = """\
[host]
pcpus = 2
policy = "python:round_robin:RoundRobin"
params = { slice = "5ms" }

[[vm]]
name = "seq"
count = 4
vcpus = 1
workload = "cpu-bound"

[run]
duration = "400ms"
seed = 3
"""


@pytest.fixture
def small():
    return vcpusim.Scenario(SMALL_SCENARIO, "small.toml")


class Recording(RoundRobin):
    """Round robin that records the slice each instance was made with."""

    made: list = []

    def __init__(self, slice=10_000_000):
        Recording.made.append(slice)
        super().__init__(slice)


def test_a_scenario_names_a_python_policy_and_passes_it_params():
    result = vcpusim.run(vcpusim.Scenario(FOUR_ON_TWO, "four.toml"), check=True)
    times = result.vms["cpu_time_ms"].tolist()
    assert len(times) == 4
    for t in times:
        assert t == pytest.approx(200.0, abs=6.0), times
    assert set(result.vms["policy"]) == {"python:round_robin:RoundRobin"}
    # [host.params] reach the constructor, durations in ns; without them, the class's defaults.
    Recording.made.clear()
    named = FOUR_ON_TWO.replace("round_robin:RoundRobin", "test_python_policy:Recording")
    vcpusim.run(vcpusim.Scenario(named, "four.toml"))
    vcpusim.run(vcpusim.Scenario(named.replace('params = { slice = "5ms" }\n', ""), "four.toml"))
    assert Recording.made == [5_000_000, 10_000_000]


def test_an_object_a_class_and_a_name_run_the_same_policy_to_the_same_bytes(small):
    by_object = vcpusim.run(small, policy=RoundRobin())
    by_class = vcpusim.run(small, policy=RoundRobin)
    by_name = vcpusim.run(small, policy="python:round_robin:RoundRobin")
    assert by_object.vms_csv == by_class.vms_csv == by_name.vms_csv
    assert vcpusim.run(small, policy=RoundRobin()).vms_csv == by_object.vms_csv, "same seed, same bytes"
    # And it is not the cfs the scenario names.
    assert vcpusim.run(small).vms_csv != by_object.vms_csv


def test_each_run_gets_a_fresh_copy_of_the_object(small):
    prototype = RoundRobin()
    vcpusim.run(small, policy=prototype)
    assert prototype.queue == [], "the run used a deep copy"


class Lottery(RoundRobin):
    """Round robin that picks a random runnable vCPU from its own random stream."""

    def do_schedule(self, host, p):
        prev = host.current(p)
        if prev is not None and host.state(prev) != "running":
            prev = None
        allowed = [v for v in self.queue if host.may_run(v, p)]
        if not allowed:
            return (prev, self.slice) if prev is not None else None
        v = host.random.choice(allowed)
        self.queue.remove(v)
        if prev is not None:
            self.queue.append(prev)
        return v, self.slice


def test_a_policy_draws_from_its_own_seeded_stream(small):
    one = vcpusim.run(small, policy=Lottery, seed=1)
    assert vcpusim.run(small, policy=Lottery, seed=1).vms_csv == one.vms_csv
    assert vcpusim.run(small, policy=Lottery, seed=2).vms_csv != one.vms_csv


def test_a_decision_running_a_vcpu_twice_is_a_policy_error_naming_the_call(small):
    class Greedy(RoundRobin):
        def do_schedule(self, host, p):
            return 0, None

    with pytest.raises(vcpusim.PolicyError) as caught:
        vcpusim.run(small, policy=Greedy)
    message = str(caught.value)
    assert "policy python:test_python_policy:" in message and "Greedy failed at t=" in message
    assert "do_schedule(pCPU " in message and "picked vCPU 0, but it is Running on pCPU " in message


def test_a_decision_on_a_forbidden_pcpu_is_a_policy_error():
    pinned = SMALL_SCENARIO.replace('name = "parallel"', 'name = "parallel"\ncpus = "0-1"')

    class Anywhere(RoundRobin):
        def do_schedule(self, host, p):
            # Ignores affinity: takes the first queued vCPU whatever it may run on.
            if self.queue:
                return self.queue.pop(0), self.slice
            return None

    with pytest.raises(vcpusim.PolicyError, match=r"picked vCPU \d+, outside its hard affinity 0-1"):
        vcpusim.run(vcpusim.Scenario(pinned, "pinned.toml"), policy=Anywhere)


def test_an_exception_in_a_callback_propagates_with_its_traceback_and_the_simulated_time(small):
    class Boom(RoundRobin):
        def do_schedule(self, host, p):
            if host.now > 2_000_000:
                raise KeyError("no such queue")
            return super().do_schedule(host, p)

    with pytest.raises(KeyError, match="no such queue") as caught:
        vcpusim.run(small, policy=Boom())
    notes = getattr(caught.value, "__notes__", [])
    assert len(notes) == 1 and notes[0].startswith("raised in Boom.do_schedule(pCPU ") and "of simulated time" in notes[0]
    shown = io.StringIO()
    traceback.print_exception(caught.value, file=shown)
    assert 'raise KeyError("no such queue")' in shown.getvalue(), "the user's own frame is in the traceback"


def test_a_constructor_error_and_a_bad_answer_surface_as_python_errors(small):
    class NoInit(RoundRobin):
        def __init__(self, slice=1):
            raise ValueError("bad slice")

    with pytest.raises(ValueError, match="bad slice") as caught:
        vcpusim.run(small, policy=NoInit)
    assert caught.value.__notes__[0].startswith("raised in NoInit.__init__ at t = 0.000000 ms")

    class Wordy(RoundRobin):
        def do_schedule(self, host, p):
            return "vCPU 3"

    with pytest.raises(TypeError, match=r"do_schedule\(pCPU \d\) returned 'vCPU 3': expected None, a vCPU id"):
        vcpusim.run(small, policy=Wordy)


def test_the_host_is_valid_only_during_the_callback_and_checks_its_arguments(small):
    kept = []

    class Keeper(RoundRobin):
        def insert_vcpu(self, host, v):
            kept.append(host)
            if v == 0:
                with pytest.raises(IndexError, match="vCPU 99 does not exist"):
                    host.state(99)
                with pytest.raises(IndexError, match="pCPU 7 does not exist"):
                    host.current(7)
                assert host.state(0) == "runnable" and host.vm(0) == 0 and host.pcpus == [0, 1, 2, 3]
                assert host.vm_name(1) == "seq-0" and host.vm_vcpus(0) == [0, 1, 2, 3]
            super().insert_vcpu(host, v)

    vcpusim.run(small, policy=Keeper)
    with pytest.raises(RuntimeError, match="valid only during the callback"):
        kept[0].now


def test_timers_fire_once_per_arming_at_their_time(small):
    fired = []

    class Ticking(RoundRobin):
        def insert_vcpu(self, host, v):
            if v == 0:
                host.set_timer(7, 1_000_000)
                host.set_timer(8, 2_000_000)
                host.stop_timer(8)
            super().insert_vcpu(host, v)

        def on_timer(self, host, key):
            fired.append((key, host.now))
            if len(fired) < 3:
                host.set_timer(key, host.now + 500_000)

    vcpusim.run(small, policy=Ticking)
    assert fired == [(7, 1_000_000), (7, 1_500_000), (7, 2_000_000)]


def test_check_mode_asks_the_policy_its_own_invariants(small):
    class Doubting(RoundRobin):
        def check(self, host):
            return "queue out of order" if host.now > 1_000_000 else None

    with pytest.raises(vcpusim.PolicyError, match="its check failed: .*queue out of order"):
        vcpusim.run(small, policy=Doubting, check=True)
    vcpusim.run(small, policy=Doubting)  # asked only in check mode


def test_bad_names_and_classes_are_scenario_errors_naming_the_key(small):
    cases = {
        "python:no_such_module_here:X": "cannot import module \"no_such_module_here\"",
        "python:round_robin:NoSuchClass": "module \"round_robin\" has no \"NoSuchClass\"",
        "python:vcpusim.api:Scenario": "vcpusim.api.Scenario is not a subclass of vcpusim.Policy",
        "python:round_robin": "expected python:<module>:<Class>",
    }
    for name, expected in cases.items():
        with pytest.raises(vcpusim.ScenarioError) as caught:
            vcpusim.run(small, policy=name)
        assert "host.policy" in str(caught.value) and expected in str(caught.value), str(caught.value)

    class NoSchedule(vcpusim.Policy):
        def insert_vcpu(self, host, v):
            pass

        def wake(self, host, v, waker):
            pass

    with pytest.raises(vcpusim.ScenarioError, match=r"does not define do_schedule\(\)"):
        vcpusim.run(small, policy=NoSchedule)
    with pytest.raises(TypeError, match="abstract method 'do_schedule'|abstract method do_schedule"):
        NoSchedule()

    class BadParams(RoundRobin):
        params = {"slice": [1, 2]}

    with pytest.raises(vcpusim.ScenarioError, match=r"params\[\"slice\"\] = \[1, 2\]: expected a bool"):
        vcpusim.run(small, policy=BadParams)
    with pytest.raises(vcpusim.ScenarioError, match="slise"):
        vcpusim.run(vcpusim.Scenario(FOUR_ON_TWO.replace("slice =", "slise ="), "four.toml"))
    with pytest.raises(TypeError, match="expected a policy name, or a vcpusim.Policy subclass or object, got int"):
        vcpusim.run(small, policy=5)


def test_run_many_workers_import_the_class_by_name(tmp_path):
    scenario = vcpusim.Scenario(FOUR_ON_TWO, "four.toml")
    alone = vcpusim.run(scenario)
    results = vcpusim.run_many([scenario, scenario.with_seed(4)], processes=2, progress=False)
    assert results[0].vms_csv == alone.vms_csv
    assert results[1].vms_csv != alone.vms_csv


def test_a_changed_policy_source_changes_the_saved_run_key(tmp_path, monkeypatch):
    module = tmp_path / "my_policy_mod.py"
    module.write_text((REPO / "examples" / "policies" / "round_robin.py").read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    from vcpusim.runs import run_key

    scenario = vcpusim.Scenario(FOUR_ON_TWO.replace("round_robin:", "my_policy_mod:"), "four.toml")
    before = run_key(scenario, False, False)
    module.write_text(module.read_text() + "\n# changed\n")
    assert run_key(scenario, False, False) != before
    plain = vcpusim.Scenario(SMALL_SCENARIO, "small.toml")
    assert "policy_sources" not in str(plain.text)
    assert round_robin.RoundRobin.__doc__


def test_the_command_line_finds_a_policy_module_in_the_current_folder_and_shows_its_traceback(tmp_path):
    import subprocess
    import sysconfig
    from pathlib import Path

    # The console script pip installed beside this interpreter (`python -m vcpusim` would put the
    # current folder on sys.path itself, which is what is tested here).
    exe = Path(sysconfig.get_path("scripts")) / "vcpusim"
    assert exe.exists(), f"the package's console script is installed at {exe}"
    (tmp_path / "my_rr.py").write_text((REPO / "examples" / "policies" / "round_robin.py").read_text()
                                       + "\n\nclass Broken(RoundRobin):\n    def wake(self, host, v, waker):\n"
                                         "        raise LookupError('lost vCPU %d' % v)\n")
    (tmp_path / "rr.toml").write_text(FOUR_ON_TWO.replace("round_robin:", "my_rr:"))
    (tmp_path / "broken.toml").write_text(FOUR_ON_TWO.replace("round_robin:RoundRobin", "my_rr:Broken"))
    ok = subprocess.run([exe, "run", "rr.toml", "--out", "out"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "python:my_rr:RoundRobin" in (tmp_path / "out" / "vms.csv").read_text()
    broken = subprocess.run([exe, "run", "broken.toml"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert broken.returncode == 2
    assert "LookupError: lost vCPU 0" in broken.stderr and "raise LookupError" in broken.stderr
    assert "raised in Broken.insert_vcpu(vCPU 0) at t = 0.000000 ms" in broken.stderr, broken.stderr


def test_the_benchmark_reports_ratios_and_callbacks():
    import json
    import subprocess

    out = subprocess.run([sys.executable, str(REPO / "benches" / "python_policy.py"), "--repeats", "1", "--json",
                          "--scenario", str(REPO / "scenarios" / "quickstart.toml")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    rows = {row["policy"]: row for row in report["rows"]}
    assert rows["credit"]["ratio_to_credit"] == 1.0
    python = rows["python round robin"]
    # Every event that reschedules asks do_schedule: a run of N events answers thousands.
    assert python["callbacks"] > 1000 and python["events"] > 10_000
    assert python["callbacks_per_second"] == pytest.approx(python["callbacks"] / python["seconds"])


def test_ray_workers_import_the_class_by_name():
    ray = pytest.importorskip("ray")
    scenario = vcpusim.Scenario(FOUR_ON_TWO, "four.toml")
    alone = vcpusim.run(scenario)
    # A Ray worker is a fresh interpreter: the policy's folder reaches it as a cluster user ships
    # code, through the runtime environment.
    path = str(REPO / "examples" / "policies")
    try:
        results = vcpusim.run_many_ray([scenario], progress=False, num_cpus=1, include_dashboard=False,
                                       runtime_env={"env_vars": {"PYTHONPATH": path}})
    finally:
        ray.shutdown()
    assert results[0].vms_csv == alone.vms_csv


class Shares(RoundRobin):
    """Round robin whose slice is a VM's ``share`` (its ``[vm.sched]``) times the base slice."""

    vm_params = {"share": 1, "boost": False}
    seen: dict = {}

    def adjust(self, host, vm, weight, cap):
        Shares.seen[vm] = host.vm_params(vm)

    def do_schedule(self, host, p):
        answer = super().do_schedule(host, p)
        if isinstance(answer, tuple) and answer[0] is not None:
            v, base = answer
            return v, base * host.vm_params(host.vm(v))["share"]
        return answer


TWO_ON_ONE = """\
[host]
pcpus = 1
policy = "python:test_python_policy:Shares"
params = { slice = "5ms" }

[[vm]]
name = "big"
vcpus = 1
workload = "cpu-bound"
[vm.sched]
share = 3

[[vm]]
name = "small"
vcpus = 1
workload = "cpu-bound"

[run]
duration = "400ms"
seed = 3
"""


def test_a_policys_vm_params_come_from_each_vms_sched_table():
    Shares.seen.clear()
    result = vcpusim.run(vcpusim.Scenario(TWO_ON_ONE, "two.toml"), check=True)
    # Defaults fill what [vm.sched] leaves out; the settings reach adjust, then every callback.
    assert Shares.seen == {0: {"share": 3, "boost": False}, 1: {"share": 1, "boost": False}}
    big, small = result.vms["cpu_time_ms"].tolist()
    assert big == pytest.approx(300.0, abs=10.0) and small == pytest.approx(100.0, abs=10.0), (big, small)
    # Checked against the class's vm_params, as [host.params] against params.
    with pytest.raises(vcpusim.ScenarioError, match=r'vm\[0\]\.sched\.shares: unknown key; did you mean "share"\?'):
        vcpusim.Scenario(TWO_ON_ONE.replace("share = 3", "shares = 3"), "two.toml")
    with pytest.raises(vcpusim.ScenarioError, match=r"vm\[0\]\.sched\.share: .*integer"):
        vcpusim.Scenario(TWO_ON_ONE.replace("share = 3", 'share = "lots"'), "two.toml")
    # A policy without vm_params takes no [vm.sched].
    plain = TWO_ON_ONE.replace("test_python_policy:Shares", "round_robin:RoundRobin")
    with pytest.raises(vcpusim.ScenarioError, match=r"vm\[0\]\.sched: .* takes no per-VM settings"):
        vcpusim.Scenario(plain, "two.toml")

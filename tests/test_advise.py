"""The placement advisor: candidates from the topology, the pick, the output."""

import subprocess
import sys

import pytest

import vcpusim
from vcpusim.advise import candidates, cpulist, libvirt_xml, memory_nodes_for, parse_cpulist, xl_line

SEED_HOST = """
[host]
pcpus = 32
sockets = 2
numa_nodes = 4
cores_per_module = 2
llc = "node"
policy = "credit"
"""

INTEL_SMT_HOST = """
[host]
pcpus = 16
sockets = 2
numa_nodes = 2
threads_per_core = 2
policy = "credit"
"""

ONE_SOCKET_8_MODULES = """
[host]
pcpus = 16
cores_per_module = 2
policy = "credit"
"""


def scenario(host: str, vcpus: int, extra: str = "") -> vcpusim.Scenario:
    return vcpusim.Scenario(host + f"""
[[vm]]
name = "par"
vcpus = {vcpus}
workload = "barrier"

[[vm]]
name = "noise"
vcpus = 2
cpus = "0-1"
workload = "cpu-bound"
{extra}
[run]
duration = "100ms"
""")


def test_candidates_on_the_seed_host_are_the_seeds_distributions():
    topo = scenario(SEED_HOST, 16).info["topology"]
    got = dict(candidates(topo, 16))
    assert cpulist(got["packed"]) == "0-15"
    assert cpulist(got["spread"]) == "0-7,16-23"  # the seed's 8-8
    assert got["one-per-module"] == list(range(0, 32, 2))  # section IV-C: even pCPUs
    # Two whole nodes are 0-15, the packed set again: run once, under the first name.
    assert "node-local" not in got
    assert cpulist(got["none"]) == "0-31"
    # Eight vCPUs: one module per node pair, dealt over the four nodes.
    eight = dict(candidates(topo, 8))
    assert eight["one-per-module"] == [0, 2, 8, 10, 16, 18, 24, 26]
    assert "node-local" not in eight  # node 0 is 0-7, the packed set


def test_candidates_leave_out_other_vms_pinned_pcpus_and_drop_duplicates():
    topo = scenario(SEED_HOST, 4).info["topology"]
    got = candidates(topo, 4, taken=[0, 1])
    named = dict(got)
    assert named["packed"] == [2, 3, 4, 5]
    assert not set(named["one-per-module"]) & {0, 1}
    # node-local prefers a node with no pinned pCPU.
    assert cpulist(named["node-local"]) == "8-15"
    sets = [tuple(p) for _, p in got]
    assert len(sets) == len(set(sets))
    # No CMT or SMT: no one-per-module candidate (it would be `spread` or `packed` again).
    flat = vcpusim.Scenario("[host]\npcpus = 4\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"barrier\"\n")
    assert "one-per-module" not in dict(candidates(flat.info["topology"], 2))


def test_cpulists_and_configuration_text():
    assert cpulist([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert parse_cpulist("0-2,5") == [0, 1, 2, 5]
    assert xl_line([0, 2, 4]) == 'cpus = "0,2,4"'
    xml = libvirt_xml([0, 2], 2)
    assert xml == "<cputune>\n  <vcpupin vcpu='0' cpuset='0,2'/>\n  <vcpupin vcpu='1' cpuset='0,2'/>\n</cputune>"
    bound = libvirt_xml([0, 2], 2, [0, 1])
    assert bound == xml + "\n<numatune>\n  <memory mode='strict' nodeset='0-1'/>\n</numatune>"


def test_memory_goes_with_each_candidates_pcpus():
    topo = scenario(SEED_HOST, 4).info["topology"]
    # Seed 001's host: pCPUs 0-7 on node 0, 8-15 on node 1, ...
    assert memory_nodes_for([0, 1, 8], topo) == [0, 1]
    assert memory_nodes_for([16, 31], topo) == [2, 3]
    # One node: nothing to advise.
    assert memory_nodes_for([0, 1], scenario(ONE_SOCKET_8_MODULES, 4).info["topology"]) is None
    table = vcpusim.advise(scenario(INTEL_SMT_HOST, 4), vms=["par"], processes=1, seeds=1)
    for _, row in table.iterrows():
        nodes = memory_nodes_for(parse_cpulist(row["cpus"]), scenario(INTEL_SMT_HOST, 4).info["topology"])
        want = "" if row["candidate"] == "none" else cpulist(nodes)
        assert row["memory_nodes"] == want, row["candidate"]
        # The candidate ran with its memory there: none of its run time is off those nodes.
        if want:
            assert row["remote_memory_share"] == 0.0, row["candidate"]
        assert ("<numatune>" in row["libvirt"]) == bool(want)


@pytest.mark.parametrize("host,vcpus", [(SEED_HOST, 8), (INTEL_SMT_HOST, 4), (ONE_SOCKET_8_MODULES, 6)])
def test_the_pick_is_never_worse_than_any_printed_candidate(host, vcpus):
    table = vcpusim.advise(scenario(host, vcpus), vms=["par"], processes=1)
    assert set(table["vm"]) == {"par"}
    assert table["best"].sum() == 1
    best = table[table["best"]].iloc[0]
    assert best["throughput"] == table["throughput"].max()
    assert best["throughput"] > 0
    assert best["why"]
    assert best["xl"] == f'cpus = "{best["cpus"]}"'
    # Every candidate was actually simulated with its own affinity: the one-pCPU-per-vCPU
    # candidates can differ from the unpinned one.
    assert len(table) >= 4


def test_advise_refuses_unknown_vms_with_the_names():
    with pytest.raises(ValueError, match="no \\[\\[vm\\]\\] named 'nope' \\(entries: par, noise\\)"):
        vcpusim.advise(scenario(SEED_HOST, 4), vms=["nope"], processes=1)
    with pytest.raises(TypeError, match="vms: expected a list"):
        vcpusim.advise(scenario(SEED_HOST, 4), vms="par", processes=1)


def test_cli_prints_the_pick_as_xl_and_libvirt(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(scenario(ONE_SOCKET_8_MODULES, 4).text)
    out = subprocess.run([sys.executable, "-m", "vcpusim", "advise", str(path), "--vm", "par", "--processes", "1",
                          "--csv", str(tmp_path / "c.csv")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "best for par:" in out.stdout
    assert "xl:      cpus = \"" in out.stdout
    assert "<vcpupin vcpu='3' cpuset=" in out.stdout
    assert (tmp_path / "c.csv").read_text().startswith("vm,candidate,cpus,pcpus,memory_nodes,throughput")
    bad = subprocess.run([sys.executable, "-m", "vcpusim", "advise", str(path), "--vm", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "error: advise: vms: no [[vm]] named 'nope'" in bad.stderr
    assert "Traceback" not in bad.stderr


def solo_cpu_bound(duration: str) -> vcpusim.Scenario:
    """A 4-vCPU cpu-bound VM alone on the 16-pCPU host (~4 units of progress per simulated ms)."""
    return vcpusim.Scenario(ONE_SOCKET_8_MODULES + f"""
[[vm]]
name = "solo"
vcpus = 4
workload = "cpu-bound"
[run]
duration = "{duration}"
""")


def test_each_candidate_runs_on_several_seeds_and_ties_are_reported_as_ties():
    # A cpu-bound VM alone on a host with a pCPU for each of its vCPUs and more: every candidate
    # gives it the same throughput, so no pick beats another beyond noise.
    sc = solo_cpu_bound("50ms")
    table = vcpusim.advise(sc, processes=1, seeds=3)
    assert (table["seeds"] == 3).all()
    assert ((table["throughput_lo"] <= table["throughput"]) & (table["throughput"] <= table["throughput_hi"])).all()
    assert table["tie"].all(), table[["candidate", "throughput", "throughput_lo", "throughput_hi", "tie"]]
    why = table[table["best"]].iloc[0]["why"]
    assert "no significant difference from" in why and "over 3 seeds" in why, why
    one = vcpusim.advise(sc, processes=1, seeds=1)
    assert one["throughput_lo"].isna().all() and one["tie"].all()
    assert "with one seed (no interval)" in one[one["best"]].iloc[0]["why"]
    with pytest.raises(ValueError, match="advise: seeds: expected a number of seeds from 1 to 1000, got 0"):
        vcpusim.advise(sc, processes=1, seeds=0)


def test_a_pick_that_beats_the_rest_beyond_noise_has_no_ties():
    # The barrier VM configured onto the hog's two pCPUs: its as-configured candidate loses
    # beyond noise on every seed, and is the one candidate not tied with the best.
    sc = vcpusim.Scenario(ONE_SOCKET_8_MODULES + """
[[vm]]
name = "par"
vcpus = 4
cpus = "0-1"
workload = "barrier"

[[vm]]
name = "noise"
vcpus = 2
cpus = "0-1"
workload = "cpu-bound"

[run]
duration = "100ms"
""")
    table = vcpusim.advise(sc, vms=["par"], processes=1, seeds=3)
    shown = table[["candidate", "cpus", "throughput", "throughput_lo", "throughput_hi", "tie"]]
    beaten = table[~table["tie"]]
    assert list(beaten["candidate"]) == ["as-configured"], shown
    assert beaten["throughput_hi"].iloc[0] < table[table["best"]]["throughput_lo"].iloc[0], shown


def test_runs_too_short_to_rank_on_are_flagged_and_a_duration_lengthens_them():
    # A cpu-bound VM of 4 vCPUs makes ~4 chunks of 1 ms per simulated ms: ~40 in 10 ms (short),
    # ~400 in 100 ms.
    sc = solo_cpu_bound("10ms")
    short = vcpusim.advise(sc, processes=1, seeds=2)
    assert short["short"].all() and (short["progress"] < 100).all(), short[["candidate", "progress"]]
    why = short[short["best"]].iloc[0]["why"]
    assert "runs too short to rank on:" in why and "lengthen the run (--duration, or [run] duration)" in why, why
    longer = vcpusim.advise(sc, processes=1, seeds=2, duration="100ms")
    assert not longer["short"].any() and (longer["progress"] > 300).all(), longer[["candidate", "progress"]]
    assert "too short" not in longer[longer["best"]].iloc[0]["why"]
    with pytest.raises(TypeError, match="advise: duration: expected a duration with a unit"):
        vcpusim.advise(sc, processes=1, duration=5)

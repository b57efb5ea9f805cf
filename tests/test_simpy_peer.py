"""benches/simpy_peer.py: the SimPy peer benchmark runs on tiny sizes and both simulators agree on
the model's outcome (every vCPU's CPU time), not on speed (no timed assertion)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("simpy")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))
import simpy_peer  # noqa: E402


def test_both_give_every_vcpu_its_round_robin_share():
    # 3 vCPUs on 2 pCPUs for 1.2 s: 800 ms each, within two 30 ms slices.
    vs = simpy_peer.run_vcpusim(3, 2, 1200)
    sp = simpy_peer.run_simpy(3, 2, 1200)
    assert len(vs["cpu_time_ms"]) == len(sp["cpu_time_ms"]) == 3
    assert sum(sp["cpu_time_ms"]) == pytest.approx(2 * 1200)
    assert all(abs(x - 800) <= 60 for x in vs["cpu_time_ms"] + sp["cpu_time_ms"]), (vs, sp)
    assert simpy_peer.agree(vs["cpu_time_ms"], sp["cpu_time_ms"], 1200, 2)
    assert vs["events"] > 0 and sp["events"] > 0


def test_agree_refuses_an_unfair_split():
    assert not simpy_peer.agree([1200.0, 600.0, 600.0], [800.0, 800.0, 800.0], 1200, 2)
    assert not simpy_peer.agree([800.0, 800.0], [800.0, 800.0, 800.0], 1200, 2)


def test_the_script_reports_both_and_their_ratio():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "simpy_peer.py"), "--vcpus", "4", "--pcpus", "2",
         "--duration", "300ms", "--repeats", "2", "--json"],
        capture_output=True, text=True, check=True,
    )
    report = json.loads(out.stdout)
    assert report["agree"] is True
    assert report["vcpusim"]["events"] > 0 and report["simpy"]["events"] > 0
    assert report["ratio_events_per_s"] > 0


def test_the_script_refuses_a_duration_under_one_slice():
    out = subprocess.run([sys.executable, str(ROOT / "benches" / "simpy_peer.py"), "--duration", "10ms"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "duration of at least 30ms" in out.stderr

"""Cpupools, affinity and caps from the front end: the example host runs through the CLI and the
Python API with the pool of each VM in the results, and bad pool keys are user errors (exit 2,
file, key and value named, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_scenario

import vcpusim

EXAMPLE = Path(__file__).resolve().parent.parent / "scenarios" / "examples" / "cpupools.toml"


def test_the_cpupools_example_reports_pools_caps_and_entitlements():
    res = vcpusim.run(vcpusim.Scenario.from_toml(EXAMPLE).with_duration("3s"))
    vms = res.vms.set_index("vm")
    assert vms.loc["web", "pool"] == "fast" and vms.loc["parallel", "pool"] == "pool0"
    assert vms.loc["web", "cap"] == 150
    # Capped at 1.5 pCPUs of the 12: 0.125 of the host, and it runs close to that.
    assert vms.loc["web", "entitled_share"] == pytest.approx(0.125)
    # Credit rounds each period up to whole credits: with the 1 ms slice of "fast" that is 6.5% over
    # (docs/model.md, credit caps).
    assert vms.loc["web", "cpu_time_ms"] <= 1.10 * 4500
    summary = res.summary
    assert [p["name"] for p in summary["pools"]] == ["pool0", "fast"]
    assert summary["pools"][1]["pcpus"] == "10-11"
    assert summary["pool_changes"] == [{"at_ns": 2_000_000_000, "pcpu": 9, "to": "fast"}]


def test_the_cli_table_shows_the_pool_column(cli, tmp_path):
    done = cli("run", EXAMPLE, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "pool" in done.stdout and "fast" in done.stdout
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["pools"][1]["name"] == "fast"


@pytest.mark.parametrize(
    "host_extra, vm_extra, expected",
    [
        ('[[host.pool]]\nname = "f"\npcpus = "3-1"\n', "", 'host.pool[0].pcpus: range "3-1" in "3-1" runs backwards'),
        ('[[host.pool]]\nname = "f"\npcpus = "a"\n', "", 'host.pool[0].pcpus: "a" in "a" is not a pCPU number'),
        ('[[host.pool]]\nname = "f"\npcpus = "0-3"\n', "", "host.pool: the [[host.pool]] entries take every pCPU"),
        ("", 'pool = "nope"\n', 'vm[0].pool: unknown pool "nope"'),
        ('[[host.pool]]\nname = "f"\npcpus = "3"\n', 'pool = "f"\ncpus = "0-1"\n', 'vm[0].cpus: VM "a": hard affinity "0-1" has no pCPU in its pool "f"'),
        ("", "cap = -5\n", "vm[0].cap: expected a non-negative integer"),
    ],
)
def test_bad_pool_affinity_and_cap_keys_are_user_errors(cli, tmp_path, host_extra, vm_extra, expected):
    text = f'[host]\npcpus = 4\n{host_extra}\n[[vm]]\nname = "a"\nvcpus = 1\nworkload = "cpu-bound"\n{vm_extra}'
    path = write_scenario(tmp_path, text)
    done = cli("validate", path)
    assert done.returncode == 2, done.stdout
    assert f"{path}: {expected}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr

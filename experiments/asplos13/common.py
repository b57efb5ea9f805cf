"""Shared machinery of the seed-000 experiment scripts (Kim et al., "Demand-based coordinated
scheduling for SMP VMs", ASPLOS'13: ../shared/seeds/000_43dd62cb774fc5d7.txt).

One place for the paper's setup (section 4: 8 pCPUs without SMT, 8-vCPU VMs for parallel
applications, 1-vCPU "UP" VMs, equal shares, no PLE on the main Xeon X5550 host), for the five
scheduling configurations of section 4 (Figures 8, 9, 11) and for the pipeline every script
shares (in ../runkit.py, shared with the other experiment sets): build scenarios from dicts, run
them over seeds with ``vcpusim.run_many`` (two processes, saved as they finish so a rerun
resumes), turn the runs into one long table, aggregate the mean and 95% interval over seeds, write
CSV and PNG, and print the paper's claims beside ours, each judged by the validation protocol
(../protocol.py, docs/validation.md).

"Execution time" is measured the same way in every script: each run lasts a fixed simulated
duration and a workload's time per unit of progress is ``simulated time / progress``. The paper
repeats every workload of a mix until all executions overlap (section 4), so a rate over a
window where everything runs together is its closest analogue; a normalized execution time is
then a ratio of progress counts over the same window.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

import vcpusim

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # experiments/, for the shared runkit

from runkit import *  # noqa: E402,F401,F403  (re-exported for the figure scripts: runkit.__all__)

OUT.set_root(HERE / "out")

# --- The paper's setup (seed 000 section 4) ------------------------------------------------------

PCPUS = 8  # two quad-core Xeon X5550, hyperthreading disabled
#: Section 4: "two quad-core Intel Xeon X5550" (section 4.3: two quad-core E5607): two sockets, each
#: its own NUMA node (Nehalem/Westmere-EP integrate the memory controller), so CFS 3.2 builds MC per
#: socket under NODE (hypervisor/policies/cfs/domains.rs).
SOCKETS = 2
NUMA_NODES = 2
PAR_VCPUS = 8  # "an 8-vCPU VM ... to host a parallel application" (4.1.1), PARSEC -n 8 (3.1)
UP_VMS = 4  # "four 1-vCPU VMs (called UP VMs)" running single-threaded x264 (4.1.2)
# Equal shares per VM (CFS group shares, section 4): every VM keeps the default weight.

#: Section 4.1.1, last paragraph: "we chose 500us as preemption delay and urgent tslice, and 18ms
#: as urgent allowance in the remaining evaluations".
URGENT_TSLICE = "500us"
URGENT_ALLOWANCE = "18ms"
RESCHED_DP = "500us"
#: Section 4.2: a reschedule-IPI recipient is urgent "for 500us, which is the same as the urgent
#: tslice".
RESCHED_CO = "500us"

#: The X5550 host of sections 3-4.2 has no pause-loop exiting.
PLE_OFF = {"enabled": False}
#: Section 4.3: Xeon E5607 (2.27 GHz), PLE_Gap 128 and PLE_Window 4096. KVM in Linux 3.2 keeps the
#: window fixed (ple_window_grow arrived in 3.18), hence grow = 1.
PLE_ON = {"enabled": True, "window_cycles": 4096, "cpu_ghz": 2.27, "grow": 1}

#: PARSEC 2.1 applications as the seed lists them (Table 1, Figure 8).
PARSEC_APPS = (
    "blackscholes", "bodytrack", "canneal", "dedup", "facesim", "ferret", "fluidanimate",
    "freqmine", "raytrace", "streamcluster", "swaptions", "vips", "x264",
)
#: The sequential workload of the UP VMs (section 4.1.2).
UP_APP = "x264-single"

#: Built-in stand-ins for a core built without the PARSEC models (workload name, params).
STAND_INS = {
    "streamcluster": ("barrier", {}),
    "vips": ("tlb", {}),
    "dedup": ("pipeline", {}),
    "x264-single": ("cpu-bound", {}),
}


def _available_workloads() -> set[str]:
    return {w["name"] for w in vcpusim.catalog()["workloads"]}


_WORKLOADS: set[str] | None = None


def workload(app: str) -> tuple[str, dict]:
    """The workload name and default params that model PARSEC application ``app``."""
    global _WORKLOADS
    if _WORKLOADS is None:
        _WORKLOADS = _available_workloads()
    name = f"parsec.{app}"
    if name in _WORKLOADS:
        return name, {}
    if app in STAND_INS:
        return STAND_INS[app]
    raise SystemExit(f"workload {name!r} is not in this build of vcpusim and has no stand-in; "
                     f"rebuild with `pip install .` (available: {sorted(_WORKLOADS)})")


def parallel_vm(name: str, app: str, *, uvf: dict | None = None, params: dict | None = None,
                guest: dict | None = None) -> dict:
    """An 8-vCPU VM running ``app`` as PARSEC's ``-n 8`` runs it (section 3.1: "each application
    ran with eight threads"): the model's default thread count for 8 vCPUs, which is 8 for most
    applications and more for the pipelines, whose every parallel stage gets 8 threads (dedup
    3 x 8 + 2 = 26, ferret 4 x 8 + 2 = 34)."""
    wl, base_params = workload(app)
    vm = {"name": name, "vcpus": PAR_VCPUS, "workload": wl}
    merged = {**base_params, **(params or {})}
    if merged:
        vm["params"] = merged
    if uvf:
        vm["uvf"] = dict(uvf)
    if guest:
        vm["guest"] = dict(guest)
    return vm


def up_vms(name: str = "up", count: int = UP_VMS) -> dict:
    """``count`` 1-vCPU VMs running single-threaded x264 (section 4.1.2)."""
    wl, params = workload(UP_APP)
    vm = {"name": name, "count": count, "vcpus": 1, "workload": wl}
    if params:
        vm["params"] = params
    return vm


def host(*, placement: str = "default", uvf: dict | None = None, ple: dict = PLE_OFF) -> dict:
    """The 8-pCPU CFS host of two quad-core sockets; ``uvf`` is the ``[host.uvf]`` table (None: the overlay is off)."""
    h = {"pcpus": PCPUS, "sockets": SOCKETS, "numa_nodes": NUMA_NODES, "policy": "cfs",
         "placement": placement, "ple": dict(ple)}
    if uvf is not None:
        h["uvf"] = dict(uvf)
    return h


def uvf_host(tslice: str = URGENT_TSLICE, allowance: str = URGENT_ALLOWANCE) -> dict:
    return {"urgent_tslice": tslice, "urgent_allowance": allowance}


@dataclass(frozen=True)
class Config:
    """One scheduling scheme of section 4: a placement and the UVF features of every VM."""

    name: str
    placement: str
    resched_dp: bool = False
    tlb_co: bool = False
    resched_co: bool = False

    @property
    def uses_uvf(self) -> bool:
        return self.resched_dp or self.tlb_co or self.resched_co

    def vm_uvf(self) -> dict | None:
        knobs = {}
        if self.resched_dp:
            knobs["resched_dp"] = RESCHED_DP
        if self.tlb_co:
            knobs["tlb_co"] = True
        if self.resched_co:
            knobs["resched_co"] = RESCHED_CO
        return knobs or None

    def host(self, ple: dict = PLE_OFF) -> dict:
        return host(placement=self.placement, uvf=uvf_host() if self.uses_uvf else None, ple=ple)


BASELINE = Config("Baseline", "default")
BALANCE = Config("Balance", "balance")
LC_BALANCE = Config("LC Balance", "lc-balance")
LC_DP = Config("LC+Resched-DP", "lc-balance", resched_dp=True)
LC_DP_TLB = Config("LC+Resched-DP+TLB-Co", "lc-balance", resched_dp=True, tlb_co=True)
#: The five schemes of Figures 8 and 9 (section 4, "a" to "e" in Figure 9's caption).
FIVE_CONFIGS = (BASELINE, BALANCE, LC_BALANCE, LC_DP, LC_DP_TLB)


def mix_with_up_vms(config: Config, app: str, *, ple: dict = PLE_OFF, guest: dict | None = None) -> dict:
    """Section 4.1.2's mix: ``app`` in an 8-vCPU VM beside four UP VMs running x264, every VM
    with the configuration's UVF features (a host-wide scheme)."""
    uvf = config.vm_uvf()
    up = up_vms()
    if uvf:
        up["uvf"] = uvf
    return {"host": config.host(ple), "vm": [parallel_vm("par", app, uvf=uvf, guest=guest), up]}


def solo(app: str, *, vcpus: int = PAR_VCPUS, params: dict | None = None) -> dict:
    """``app`` alone on the host (the seed's "solorun"), under the default CFS host."""
    if vcpus == 1:
        vm = up_vms("solo", count=1)
        vm.pop("count")
    else:
        vm = parallel_vm("solo", app, params=params)
    return {"host": host(), "vm": [vm]}



def kernel_ratio(df: pd.DataFrame) -> pd.Series:
    """Share of a VM's CPU time in the guest kernel (Figure 2): timed kernel work, kernel
    spinlock spinning, TLB-ack waiting and IPI handlers over all its CPU time."""
    kernel = df["kernel_time_ms"] + df["spin_time_ms"] + df["tlb_wait_ms"] + df["irq_time_ms"]
    return kernel / df["cpu_time_ms"]

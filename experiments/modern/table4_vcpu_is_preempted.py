"""Table 4: what ``vcpu_is_preempted`` buys at wake-up placement, and in the PV qspinlock.

Linux commit 247f2f6f3c70 ("sched/core: Don't schedule threads on pre-empted vCPUs", Linux 4.17,
kernel/sched/core.c ``available_idle_cpu``): the wake-up path passes over an idle vCPU that the
hypervisor has preempted (KVM: arch/x86/kernel/kvm.c ``__kvm_vcpu_is_preempted`` reads the
steal-time area's ``preempted``, Linux 4.16). The mutex and rwsem optimistic spinners also stop
spinning on a preempted owner (kernel/locking/mutex.c ``mutex_spin_on_owner``); the model has
mmap_sem's rwsem spinners (on in linux-6.x), not the kernel mutex's (docs/model.md
"vcpu_is_preempted"). The commit gives no number for these programs: the program rows are extras.

The PV qspinlock's wait path read the flag for a while: commit 75437bb304b2 ("locking/
pvqspinlock: Don't wait if vCPU is preempted") made a queued waiter stop spinning when its
predecessor's vCPU is preempted, and commit 89340d0935c9 (Revert "locking/pvqspinlock: Don't
wait if vCPU is preempted") removed it: its message reports ebizzy -M on three VMs of 80 vCPUs
(80 threads) reduced by the check from 13000-14000 to 1700-1800 records/s (host without the
boosts of table 6), and from 14000-15500 to 4500-5000 with them. 6.x's ``pv_wait_early`` tests
only the predecessor's pv state (kernel/locking/qspinlock_paravirt.h). The model has neither the
check nor ``pv_wait_early``.

Ours: the modern baseline with PV sched yield off (it needs ``vcpu_is_preempted``, so turning
the flag off would turn it off too), with and without ``vcpu_is_preempted``.

Claims (docs/validation.md):

* ``revert-no-boosts``, ``revert-boosts`` (predictions, range): the revert's two measurements,
  as the ratio of ebizzy's records/s with the check to without (1700-1800 / 13000-14000 is
  0.121-0.138; 4500-5000 / 14000-15500 is 0.290-0.357). Not measured: the model has no such
  check, so ``judge_range`` gets no estimate and gives N (cause: mechanism).
* ``wake-<program>`` (extras, direction): the change of the program's throughput (progress per
  second, mean over the VMs) with ``vcpu_is_preempted`` over without, ``protocol.change(...,
  paired=True)`` on the seed, at 2 and 3 VMs, each ``judge_direction`` (+), ``worst``.

    python experiments/modern/table4_vcpu_is_preempted.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, EXTRA, MECHANISM, NO_ESTIMATE, RANGE, Claim, Settings, ablation, feature_change, feature_outputs,
    figure_main, items_text, judge_direction, judge_range, min_n, overcommitted, parse_args, vms_set, worst,
)

FIG = "table4"
BASE = ("-pv_sched_yield",)
BENCHES = ("kbuild", "dbench", "hackbench", "dedup")
QUICK = ("hackbench", "dbench")
REVERT = "commit 89340d0935c9 'Revert \"locking/pvqspinlock: Don't wait if vCPU is preempted\"', message's table"
#: 89340d0935c9's message: ebizzy -M records/s, three VMs of 80 vCPUs, with the check -> without it.
REVERTS = {
    "revert-no-boosts": ("host without the kvm_vcpu_on_spin boosts", (1700, 1800), (13000, 14000)),
    "revert-boosts": ("host with the boosts d73eb57b80b9 and 266e85a5ec91", (4500, 5000), (14000, 15500)),
}
NOT_MODELLED = ("not measured: the model's PV qspinlock has neither 75437bb304b2's vcpu_is_preempted check in "
                "pv_wait_node nor 6.x's pv_wait_early (docs/model.md)")


def measure(settings: Settings, seeds=None) -> pd.DataFrame:
    return ablation("-vcpu_is_preempted", QUICK if settings.quick else BENCHES, vms_set(settings), settings,
                    base=BASE, seeds=seeds)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    return feature_outputs(df, FIG, "Table 4: vcpu_is_preempted at wake-up placement (PV sched yield off)")


def claims(df: pd.DataFrame) -> list[Claim]:
    over = overcommitted(df["layout"])
    out = []
    for b in BENCHES:
        g = {l: feature_change(df, bench=b, layout=l) for l in over}
        out.append(Claim(
            id=f"wake-{b}", figure="Table 4",
            claim=f"not waking threads onto preempted vCPUs speeds {b} up under overcommit",
            paper="not stated (247f2f6f3c70 gives no number for these programs)",
            source="commit 247f2f6f3c70 'sched/core: Don't schedule threads on pre-empted vCPUs': our question",
            kind=EXTRA, type=DIRECTION, ours=items_text(g), verdict=worst(judge_direction(e, +1) for e in g.values()),
            n=min_n(g.values()),
            note="throughput (progress per s, mean over the VMs) with vcpu_is_preempted over without, PV sched yield "
                 "off in both, paired on the seed"))
    for cid, (host, (lo_with, hi_with), (lo_without, hi_without)) in REVERTS.items():
        lo, hi = lo_with / hi_without, hi_with / lo_without
        out.append(Claim(
            id=cid, figure="Table 4",
            claim=f"vcpu_is_preempted in the PV qspinlock's wait path cuts ebizzy -M at 3 VMs ({host})",
            paper=f"{lo_without:,}-{hi_without:,} -> {lo_with:,}-{hi_with:,} records/s (ratio {lo:.3f}-{hi:.3f})",
            source=REVERT, type=RANGE, ours=NOT_MODELLED, verdict=judge_range(NO_ESTIMATE, lo, hi, ref=1.0),
            n=int(df["seed"].nunique()), cause=MECHANISM,
            note="the ratio of records/s with the check to without; 6.x's PV qspinlock does not read the flag"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))

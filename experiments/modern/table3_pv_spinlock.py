"""Table 3: what the PV qspinlock buys: kernel-lock-heavy programs on 1-3 VMs.

Linux's PV qspinlock (kernel/locking/qspinlock_paravirt.h ``pv_wait_node`` / ``pv_kick_node``,
Linux 4.2; the KVM side arch/x86/kernel/kvm.c ``kvm_wait`` / ``kvm_kick_cpu``, Linux 3.12 for the
ticket-lock version): a waiter spins ``SPIN_THRESHOLD`` (1 << 15) times, then halts, and the
unlocker's ``KVM_HC_KICK_CPU`` wakes the queue head. Without it (``pv_spinlock = false``) the
Linux 6.x guest on KVM takes ``virt_spin_lock``'s test-and-set lock (arch/x86/include/asm/
qspinlock.h): no queue, so no waiter is stuck behind a preempted one, but nobody sleeps either.

The patches give no number for these programs, so nothing here is a prediction: every row is an
``extra`` (our questions about the feature), judged by the protocol all the same.

Ours: the modern baseline with and without ``pv_spinlock`` on kbuild, dbench, hackbench and
PARSEC dedup (the programs with kernel lock contention; ebizzy's frees take ``mmap_sem`` for read
and contend on no spinlock in the model).

Claims (docs/validation.md), all extras:

* ``helps-<program>`` (direction): the change of the program's throughput (each VM's progress
  per second, mean over the VMs) with the feature over without, ``protocol.change(...,
  paired=True)`` on the seed, at 2 and 3 VMs, each ``judge_direction`` (+), ``worst``.
* ``kvm-wait-halts`` (direction): waiters halt in ``kvm_wait``: the per-seed total of
  ``pv_poll_blocks`` over every program and layout of the table, with the feature minus
  without, ``judge_direction`` (+) (without the feature there is no ``kvm_wait``).
* ``spin-<program>`` (direction): less time spinning on kernel locks (``spin_time_ms``, all VMs)
  with the feature at 2 and 3 VMs: paired change, ``judge_direction`` (-), ``worst``.

    python experiments/modern/table3_pv_spinlock.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, EXTRA, Claim, Settings, ablation, feature_change, feature_outputs, figure_main, items_text,
    judge_direction, min_n, overcommitted, paired_diff, parse_args, totals, vms_set, worst,
)

FIG = "table3"
BENCHES = ("kbuild", "dbench", "hackbench", "dedup")
QUICK = ("dbench", "hackbench")
NO_NUMBER = "not stated (the patches give no number for these programs)"
SOURCE = "PV qspinlock (qspinlock_paravirt.h, Linux 4.2): our question"


def measure(settings: Settings, seeds=None) -> pd.DataFrame:
    return ablation("-pv_spinlock", QUICK if settings.quick else BENCHES, vms_set(settings), settings, seeds=seeds)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    return feature_outputs(df, FIG, "Table 3: PV qspinlock (gain over virt_spin_lock's test-and-set)")


def claims(df: pd.DataFrame) -> list[Claim]:
    over = overcommitted(df["layout"])
    out = []
    for b in BENCHES:
        g = {l: feature_change(df, bench=b, layout=l) for l in over}
        out.append(Claim(
            id=f"helps-{b}", figure="Table 3", claim=f"PV qspinlock speeds {b} up under overcommit", paper=NO_NUMBER,
            source=SOURCE, kind=EXTRA, type=DIRECTION, ours=items_text(g),
            verdict=worst(judge_direction(e, +1) for e in g.values()), n=min_n(g.values()),
            note="throughput (progress per s, mean over the VMs) with pv_spinlock over without, paired on the seed"))
    blocks = paired_diff(totals(df, "pv_poll_blocks", variant="on"), totals(df, "pv_poll_blocks", variant="off"))
    out.append(Claim(
        id="kvm-wait-halts", figure="Table 3",
        claim="mechanism: waiters halt in kvm_wait after the spin threshold; without PV qspinlock none does",
        paper="mechanism", source="qspinlock_paravirt.h pv_wait_node / kvm_wait", kind=EXTRA, type=DIRECTION,
        estimate=blocks, ours=f"{blocks.text(0)} more halts in kvm_wait per seed (all programs and layouts)",
        verdict=judge_direction(blocks, +1),
        note="per-seed total of pv_poll_blocks over the table's runs, with the feature minus without"))
    for b in BENCHES:
        s = {l: feature_change(df, "spin_time_ms", bench=b, layout=l) for l in over}
        out.append(Claim(
            id=f"spin-{b}", figure="Table 3",
            claim=f"mechanism: {b} spends less time spinning on kernel locks under overcommit",
            paper="mechanism", source=SOURCE, kind=EXTRA, type=DIRECTION, ours=items_text(s),
            verdict=worst(judge_direction(e, -1) for e in s.values()), n=min_n(s.values()),
            note="change of spin_time_ms (all VMs) with the feature, paired on the seed; the queue makes a waiter "
                 "wait behind a preempted waiter, test-and-set has no queue"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))

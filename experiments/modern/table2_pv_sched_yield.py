"""Table 2: what PV sched yield buys on ebizzy -M with the PV TLB flush off.

The PV sched yield series (host side 715062970f37 "KVM: X86: Implement PV sched yield
hypercall", the ``KVM_HC_SCHED_YIELD`` hypercall; guest side "KVM: X86: Implement PV sched yield
in linux guest", arch/x86/kernel/kvm.c ``kvm_smp_send_call_func_ipi``; Linux 5.2-5.3): after
sending a call-function IPI the sender yields (``KVM_HC_SCHED_YIELD``, a directed yield on the
host) to the first target its steal-time area says is preempted. 715062970f37's message: "17%
performace increase of ebizzy benchmark can be observed in an over-subscribe environment. (w/
kvm-pv-tlb disabled, testing TLB flush call-function IPI-many ...)".

Ours: the modern baseline with ``pv_tlb_flush = false``, with and without ``pv_sched_yield``.

Claims (docs/validation.md):

* ``gain-overcommit`` (prediction, point): the +17%. The message does not give its overcommit
  level; it is judged at our 2-VM layout (2 VMs of 8 vCPUs on 8 pCPUs, chosen when the table
  was written, before any run). Ours is the change of ebizzy's records/s with the feature over
  without, ``protocol.change(..., paired=True)`` on the seed; ``judge_point`` against +17% with
  reference 0.
* ``other-overcommit`` (extra, direction): the same change at our other overcommitted layouts
  (3 VMs, 1.5x, 1.875x), each ``judge_direction`` (+), ``worst``.
* ``no-gain-1vm`` (extra, no effect): without overcommit no target is preempted, so there is
  nothing to yield to: the change at 1 VM, ``judge_no_effect``.
* ``yields-to-preempted`` (extra, direction): the sender yields with the feature
  (``yields_ipi``, per run, all VMs) and never without: the per-seed difference on minus off at
  each overcommitted layout, ``judge_direction`` (+), ``worst``.

    python experiments/modern/table2_pv_sched_yield.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, EXTRA, LAYOUTS, MECHANISM, NO_EFFECT, POINT, Claim, Settings, ablation, feature_change, feature_diff,
    feature_outputs, figure_main, items_text, judge_direction, judge_no_effect, judge_point, min_n, overcommitted,
    parse_args, values, worst,
)

FIG = "table2"
BASE = ("-pv_tlb_flush",)
#: 715062970f37's message: ebizzy, "an over-subscribe environment", PV TLB flush disabled.
PAPER = 0.17
#: The layout the +17% is judged at (the message gives none; fixed before any run).
JUDGED_AT = "2vm"
SOURCE = "commit 715062970f37 'KVM: X86: Implement PV sched yield hypercall', message"
MEASURE = ("ebizzy -M records/s (each VM's progress per s, mean over the VMs) with pv_sched_yield over without, "
           "PV TLB flush off in both, paired on the seed")


def measure(settings: Settings, seeds=None) -> pd.DataFrame:
    layouts = ("1vm", "2vm", "1.875x") if settings.quick else LAYOUTS
    return ablation("-pv_sched_yield", ["ebizzy"], layouts, settings, base=BASE, seeds=seeds)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    return feature_outputs(df, FIG, "Table 2: PV sched yield on ebizzy -M, PV TLB flush off")


def claims(df: pd.DataFrame) -> list[Claim]:
    g = feature_change(df, bench="ebizzy", layout=JUDGED_AT)
    others = {l: feature_change(df, bench="ebizzy", layout=l) for l in LAYOUTS
              if l not in ("1vm", JUDGED_AT)}
    alone = feature_change(df, bench="ebizzy", layout="1vm")
    over = overcommitted(df["layout"])
    yields = {l: feature_diff(df, "yields_ipi", bench="ebizzy", layout=l) for l in over}
    off = {l: values(df, "yields_ipi", bench="ebizzy", layout=l, variant="off") for l in over}
    return [
        Claim(id="gain-overcommit", figure="Table 2",
              claim="PV sched yield speeds ebizzy -M up on an over-subscribed host (PV TLB flush off)",
              paper=f"{PAPER:+.0%}", source=SOURCE, type=POINT, estimate=g, ours=f"{g.text(1, pct=True)} at 2 VMs",
              verdict=judge_point(g, PAPER, ref=0), cause=MECHANISM,
              note=f"{MEASURE}; the message gives no overcommit level: judged at 2 VMs of 8 vCPUs on 8 pCPUs, "
                   "fixed before the runs"),
        Claim(id="other-overcommit", figure="Table 2",
              claim="PV sched yield speeds ebizzy -M up at the other overcommitted layouts",
              paper="not stated for these layouts", source="not in 715062970f37's message (our question)", kind=EXTRA,
              type=DIRECTION, ours=items_text(others), verdict=worst(judge_direction(e, +1) for e in others.values()),
              n=min_n(others.values()), note=MEASURE),
        Claim(id="no-gain-1vm", figure="Table 2", claim="no gain without overcommit (no IPI target is preempted)",
              paper="not stated (our expectation)", source="not in 715062970f37's message (our question)", kind=EXTRA,
              type=NO_EFFECT, estimate=alone, ours=f"{alone.text(1, pct=True)} at 1 VM", verdict=judge_no_effect(alone),
              note=MEASURE),
        Claim(id="yields-to-preempted", figure="Table 2",
              claim="mechanism: the sender yields to a preempted IPI target; without the feature it never does",
              paper="mechanism", source="715062970f37's message (what the patch does)", kind=EXTRA, type=DIRECTION,
              ours=items_text(yields, digits=0, pct=False) + " more yields per run with the feature ("
                   + ", ".join(f"{l} {sum(v):.0f}" for l, v in off.items()) + " without, all seeds)",
              verdict=worst(judge_direction(y, +1) for y in yields.values()), n=min_n(yields.values()),
              note="per-seed difference of yields_ipi (all VMs) with the feature minus without, per overcommitted "
                   "layout"),
    ]


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))

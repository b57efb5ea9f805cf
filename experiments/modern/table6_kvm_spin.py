"""Table 6: what 6.x KVM's ``kvm_vcpu_on_spin`` candidate rules and boosts buy over 3.16's.

KVM 6.6 (virt/kvm/kvm_main.c ``kvm_vcpu_on_spin``, hypervisor/kvm.rs) yields only to ready
candidates, boosts vCPUs that are delivering interrupts (commit d73eb57b80b9 "KVM: Boost vCPUs
that are delivering interrupts", Linux 5.2) and the pv-qspinlock queue head woken by
``KVM_HC_KICK_CPU`` (commit 266e85a5ec91 "KVM: X86: Boost queue head vCPU to mitigate lock
waiter preemption", Linux 5.3), passes over siblings preempted in user mode, and alternates
``dy_eligible``; 3.16 yields to any sibling preempted while runnable. Their messages, ebizzy -M
on 80 pCPUs (2 sockets, 80 threads) with VMs of 80 vCPUs, records/s:

=====  ========================  ===========================
       d73eb57b80b9              266e85a5ec91
=====  ========================  ===========================
1 VM   21443 -> 23520 (+9%)      23520 -> 25040 (+6%)
2 VM    2800 ->  8000 (+180%)     8000 -> 13600 (+70%)
3 VM    1800 ->  3100 (+72%)      3100 ->  5400 (+74%)
=====  ========================  ===========================

The second patch's "vanilla" is the first's "boosting" in every row: one chain of runs, 21443 ->
25040 (+17%), 2800 -> 13600 (+386%), 1800 -> 5400 (+200%) from the kernel without either boost
to the kernel with both. d73eb57b80b9 also reports an 8-thread desktop (one VM of 8 vCPUs running
ebizzy -M beside one running ``stress --cpu 2``: 1570 -> 4000 records/s, +155%, and +179% with
PV sched yield); that pair of VMs is not among this table's runs, so it is not judged here.

Ours compares the whole 6.6 rule set with 3.16's (the model has no version with one boost and
not the other), the PLE window being 6.x's dynamic one in both: ebizzy, dbench and dedup on 1-3
VMs with the modern guest (PV TLB flush on), and ebizzy again with the PV TLB flush off
(schemes ``-pv_tlb_flush`` and ``-pv_tlb_flush,kvm=3.16``). The commit messages do not say
whether the PV TLB flush was on; the author's reply to the first posting of d73eb57b80b9 on
kvm-list does: "I forgot to mention that I disable pv tlb shootdown during testing".

Claims (docs/validation.md):

* ``gain-1vm``, ``gain-2vm``, ``gain-3vm`` (predictions, point): one per layout, the chain's
  gain from no boost to both boosts (the messages state the records/s; one measurement, one
  prediction: the per-patch gains are the same runs, so they are not judged again). Ours is the
  change of ebizzy's records/s (each VM's progress per second, mean over the VMs) with 6.6's
  rules over 3.16's, ``protocol.change(..., paired=True)`` on the seed, PV TLB flush off as the
  patch was tested; ``judge_point`` with reference 0.
* ``flush-on`` (extra, point): the same three judged on the modern guest (PV TLB flush on),
  ``worst`` of the three (not the patch's setup: an extra).
* ``helps-<program>`` (extras, direction): dbench and dedup, which the messages did not run:
  the change of throughput at 2 and 3 VMs, ``judge_direction`` (+), ``worst``.
* ``fewer-ple-exits`` (extra, direction): the messages state no exit count; our expectation is
  that a better candidate ends a spin sooner, so fewer pause-loop exits: the per-seed total of
  ``ple_exit_count`` over the table's modern-guest runs, 6.6 over 3.16, paired change,
  ``judge_direction`` (-).

    python experiments/modern/table6_kvm_spin.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    change,
    DIRECTION, EXTRA, MECHANISM, POINT, Claim, Settings, ablation, feature_change, feature_outputs, figure_main,
    items_text, judge_direction, judge_point, min_n, overcommitted, parse_args, totals, vms_set,
    vms_text, worst,
)

FIG = "table6"
BENCHES = ("ebizzy", "dedup", "dbench")
#: The chain of d73eb57b80b9's and 266e85a5ec91's ebizzy -M records/s at 1, 2 and 3 VMs: no boost,
#: the interrupt boost (the first message's "improved"), both boosts (the second's).
CHAIN = {"1vm": (21443, 23520, "9%", 25040, "6%"), "2vm": (2800, 8000, "180%", 13600, "70%"),
         "3vm": (1800, 3100, "72%", 5400, "74%")}
#: The chain's gain from no boost to both, from the records/s the two messages state.
PAPER = {l: both / none - 1 for l, (none, _, _, both, _) in CHAIN.items()}
SOURCE = ("commits d73eb57b80b9 'KVM: Boost vCPUs that are delivering interrupts' and 266e85a5ec91 'KVM: X86: "
          "Boost queue head vCPU to mitigate lock waiter preemption', messages' ebizzy -M tables, chained")

#: The label of the ebizzy runs with the PV TLB flush off (scheme ``-pv_tlb_flush`` vs
#: ``-pv_tlb_flush,kvm=3.16``): shootdowns then wait on preempted targets, the waits the
#: interrupt-delivering boost is for.
NOFLUSH = "ebizzy, no PV TLB flush"
MEASURE = "ebizzy -M records/s (each VM's progress per s, mean over the VMs) with KVM 6.6's rules over 3.16's"


def measure(settings: Settings, seeds=None) -> pd.DataFrame:
    df = ablation("kvm=3.16", ("ebizzy",) if settings.quick else BENCHES, vms_set(settings), settings, seeds=seeds)
    nf = ablation("kvm=3.16", ("ebizzy",), vms_set(settings), settings, base=("-pv_tlb_flush",), seeds=seeds)
    nf["bench"] = NOFLUSH
    return pd.concat([df, nf], ignore_index=True)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    return feature_outputs(df, FIG, "Table 6: KVM 6.6's kvm_vcpu_on_spin over 3.16's")


def paper_text(layout: str) -> str:
    none, irq, irq_gain, both, head_gain = CHAIN[layout]
    return (f"{none:,} -> {both:,} records/s ({PAPER[layout]:+.0%}): {none:,} -> {irq:,} (+{irq_gain}), "
            f"then -> {both:,} (+{head_gain})")


def claims(df: pd.DataFrame) -> list[Claim]:
    out = []
    # The author's reply to the first posting of d73eb57b80b9 on kvm-list: "I forgot to mention
    # that I disable pv tlb shootdown during testing": the predictions are the flush-off runs.
    for layout, paper in PAPER.items():
        g = feature_change(df, bench=NOFLUSH, layout=layout)
        out.append(Claim(
            id=f"gain-{layout}", figure="Table 6",
            claim=f"the interrupt-delivering and queue-head boosts speed ebizzy -M up, {vms_text(layout)}",
            paper=paper_text(layout), source=SOURCE + "; PV TLB flush off (the author's kvm-list reply)",
            type=POINT, estimate=g, ours=g.text(1, pct=True), verdict=judge_point(g, paper, ref=0), cause=MECHANISM,
            note=f"{MEASURE}, PV TLB flush off in both, as the patch was tested, paired on the seed; the model has no "
                 "kernel with one boost only, so the chain's two steps are judged as one; our 3.16 also lacks "
                 "yield_to_kernel_mode (and, in the model, dy_eligible), which the patches' vanilla had; 8 pCPUs, "
                 "VMs of 8 (the patches: 80, 80)"))
    on = {l: feature_change(df, bench="ebizzy", layout=l) for l in PAPER}
    out.append(Claim(
        id="flush-on", figure="Table 6",
        claim="... the same with the modern guest's PV TLB flush on",
        paper=", ".join(f"{l} {p:+.0%}" for l, p in PAPER.items()), source=SOURCE, kind=EXTRA, type=POINT,
        ours=items_text(on), verdict=worst(judge_point(on[l], p, ref=0) for l, p in PAPER.items()),
        n=min_n(on.values()),
        note=f"{MEASURE}, modern guest (PV TLB flush on) in both, paired on the seed; not the patch's setup (it "
             "was tested with the flush off), so not counted"))
    over = overcommitted(df["layout"])
    for b in ("dbench", "dedup"):
        g = {l: feature_change(df, bench=b, layout=l) for l in over}
        out.append(Claim(
            id=f"helps-{b}", figure="Table 6", claim=f"6.x's candidate rules and boosts speed {b} up under overcommit",
            paper="not measured by the patches",
            source="not in d73eb57b80b9's or 266e85a5ec91's message (our question)",
            kind=EXTRA, type=DIRECTION, ours=items_text(g), verdict=worst(judge_direction(e, +1) for e in g.values()),
            n=min_n(g.values()),
            note="throughput (progress per s, mean over the VMs) with 6.6's rules over 3.16's, paired on the seed"))
    main_runs = df[df["bench"] != NOFLUSH]
    exits = change(totals(main_runs, "ple_exit_count", variant="on"),
                          totals(main_runs, "ple_exit_count", variant="off"), paired=True)
    out.append(Claim(
        id="fewer-ple-exits", figure="Table 6",
        claim="mechanism: a better yield candidate ends a spin sooner, so fewer pause-loop exits with 6.6's rules",
        paper="not stated (our expectation; the messages give no exit count)",
        source="not in d73eb57b80b9's or 266e85a5ec91's message (our question)", kind=EXTRA,
        type=DIRECTION, estimate=exits, ours=f"{exits.text(1, pct=True)} pause-loop exits (all programs and layouts)",
        verdict=judge_direction(exits, -1),
        note="change of the per-seed total of ple_exit_count over the table's modern-guest runs, 6.6 over 3.16, "
             "paired on the seed"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))

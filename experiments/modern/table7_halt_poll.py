"""Table 7: what host halt polling buys: sleep-heavy programs, alone and overcommitted.

KVM's halt polling (virt/kvm/kvm_main.c ``kvm_vcpu_halt`` / ``grow_halt_poll_ns`` /
``shrink_halt_poll_ns``, the ``halt_poll_ns`` module parameter since Linux 4.0, x86 default
200 us): after HLT the vCPU thread polls for a wake-up before it schedules out, if its run
queue holds no other task (``kvm_vcpu_can_poll``: ``single_task_running``). A wake-up found
while polling skips the host's block-and-wake path (``[host.costs] halt_wake``, assumed 10 us
here). The patches' numbers are latency microbenchmarks, not programs we run, so nothing here is
a prediction: every row is an ``extra``, judged by the protocol all the same.

Ours: the modern baseline with and without ``[host.halt_poll]`` on the programs whose vCPUs halt:
``pipeline`` (stages handing items over queues) and ``mutex`` (threads blocking on a contended
futex mutex), 1 and 2 VMs. The PV feature patches' programs do not halt in the model at 1 VM
(kbuild and dbench have no disk to wait for; hackbench's 400 threads keep every vCPU busy), so
polling has nothing to do there.

Claims (docs/validation.md), all extras:

* ``helps-<program>`` (direction): the change of the program's throughput (progress per second,
  mean over the VMs) with halt polling over without at 1 VM, ``protocol.change(...,
  paired=True)`` on the seed, ``judge_direction`` (+).
* ``fewer-blocking-halts`` (direction): a wake-up found while polling never blocks the vCPU
  thread: fewer blocking halts (``halts``, all VMs) with polling at 1 VM, per program (paired
  change, ``judge_direction`` (-), ``worst``).
* ``no-gain-overcommitted`` (no effect): ``single_task_running`` is false on a shared pCPU, so
  polling stops: the throughput change at 2 VMs, per program, ``judge_no_effect``, ``worst``.

    python experiments/modern/table7_halt_poll.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, EXTRA, NO_EFFECT, Claim, Settings, ablation, feature_change, feature_outputs, figure_main, items_text,
    judge_direction, judge_no_effect, min_n, parse_args, worst,
)

FIG = "table7"
BENCHES = ("pipeline", "mutex")
LAYOUTS = ("1vm", "2vm")
SOURCE = "halt_poll_ns (kvm_main.c, Linux 4.0): our question (the patches measured latency only)"
THROUGHPUT = "throughput (progress per s, mean over the VMs) with [host.halt_poll] over without, paired on the seed"


def measure(settings: Settings, seeds=None) -> pd.DataFrame:
    return ablation("-halt_poll", ("mutex",) if settings.quick else BENCHES, LAYOUTS, settings, seeds=seeds)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    return feature_outputs(df, FIG, "Table 7: host halt polling (gain over no polling)")


def claims(df: pd.DataFrame) -> list[Claim]:
    out = []
    for b in BENCHES:
        g = feature_change(df, bench=b, layout="1vm")
        out.append(Claim(
            id=f"helps-{b}", figure="Table 7", claim=f"halt polling speeds {b} up on an undercommitted host (1 VM)",
            paper="not stated (latency only in the patches)", source=SOURCE, kind=EXTRA, type=DIRECTION, estimate=g,
            ours=g.text(1, pct=True), verdict=judge_direction(g, +1), note=THROUGHPUT))
    h = {b: feature_change(df, "halts", bench=b, layout="1vm") for b in BENCHES}
    out.append(Claim(
        id="fewer-blocking-halts", figure="Table 7",
        claim="mechanism: a wake-up found while polling never blocks the vCPU thread: fewer halts that block (1 VM)",
        paper="mechanism", source="kvm_main.c kvm_vcpu_halt", kind=EXTRA, type=DIRECTION, ours=items_text(h),
        verdict=worst(judge_direction(e, -1) for e in h.values()), n=min_n(h.values()),
        note="change of halts (blocking HLTs, all VMs) with polling, paired on the seed"))
    o = {b: feature_change(df, bench=b, layout="2vm") for b in BENCHES}
    out.append(Claim(
        id="no-gain-overcommitted", figure="Table 7",
        claim="polling stops paying once the host is overcommitted (single_task_running is false), 2 VMs",
        paper="not stated (what kvm_vcpu_can_poll implies)", source="kvm_main.c kvm_vcpu_can_poll", kind=EXTRA,
        type=NO_EFFECT, ours=items_text(o), verdict=worst(judge_no_effect(e) for e in o.values()),
        n=min_n(o.values()), note=THROUGHPUT))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))

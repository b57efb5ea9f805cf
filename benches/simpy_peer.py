"""vcpusim beside SimPy on a model both can express (a peer benchmark).

The model: N single-vCPU VMs, each always runnable (a CPU hog), time-shared round-robin by P
pCPUs with a fixed slice, for a simulated duration. vcpusim runs it as a scenario (``lookbusy``
VMs under ``credit``, whose equal weights and 30 ms timeslice round-robin them); SimPy runs it as
N processes taking turns at a ``simpy.Resource`` of capacity P (FIFO), holding it for one slice.
Both must give every vCPU the same CPU time, P/N of the duration (``agree``); that is the model's
outcome, checked by tests/test_simpy_peer.py. vcpusim simulates far more per slice (the guest
kernel's ticks, the hypervisor's accounting, the vCPU's run state), so the two event counts are
each simulator's own and not the same work: what is compared is events per second of CPU time,
each measured with ``time.process_time`` in this process, the two runs interleaved ``repeats``
times, medians reported with their ratio.

SimPy is an optional dependency: ``pip install ".[bench]"``.

    python benches/simpy_peer.py [--vcpus 64] [--pcpus 16] [--duration 20s] [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import simpy

import vcpusim

#: The round-robin slice: Xen credit's timeslice (CSCHED_DEFAULT_TSLICE_MS, 30 ms), which the
#: vcpusim side's credit policy uses.
SLICE_MS = 30


def vcpusim_scenario(vcpus: int, pcpus: int, duration_ms: int) -> vcpusim.Scenario:
    return vcpusim.Scenario.from_dict({
        "host": {"pcpus": pcpus, "policy": "credit"},
        "vm": [{"name": "hog", "count": vcpus, "vcpus": 1, "workload": "lookbusy"}],
        "run": {"duration": f"{duration_ms}ms", "seed": 1},
    }, "benches/simpy_peer.py")


def run_vcpusim(vcpus: int, pcpus: int, duration_ms: int) -> dict:
    scenario = vcpusim_scenario(vcpus, pcpus, duration_ms)
    start = time.process_time()
    result = vcpusim.run(scenario)
    cpu = time.process_time() - start
    return {"events": int(result.summary["events"]), "cpu_s": cpu,
            "cpu_time_ms": [float(x) for x in result.vms["cpu_time_ms"]]}


def run_simpy(vcpus: int, pcpus: int, duration_ms: int) -> dict:
    env = simpy.Environment()
    cpus = simpy.Resource(env, capacity=pcpus)
    got = [0.0] * vcpus
    running_since: list[float | None] = [None] * vcpus

    def vcpu(i: int):
        while True:
            with cpus.request() as turn:
                yield turn
                running_since[i] = env.now
                yield env.timeout(SLICE_MS)
                got[i] += env.now - running_since[i]
                running_since[i] = None

    for i in range(vcpus):
        env.process(vcpu(i))
    start = time.process_time()
    events = 0
    # env.run(until=...) without its own count: step the queue, counting what is processed.
    while env.peek() < duration_ms:
        env.step()
        events += 1
    cpu = time.process_time() - start
    # The slices still running at the end count up to the end, as vcpusim counts them.
    got = [g + (duration_ms - s if s is not None else 0.0) for g, s in zip(got, running_since)]
    return {"events": events, "cpu_s": cpu, "cpu_time_ms": got}


def agree(a: list[float], b: list[float], duration_ms: int, pcpus: int, tolerance: float = 0.05) -> bool:
    """Both give every vCPU its round-robin share, P/N of the duration, within `tolerance` of it
    or two slices, whichever is more (a run that ends mid-round leaves some vCPUs a slice ahead;
    vcpusim's start skew and hypervisor overheads take a little more)."""
    share = duration_ms * min(1.0, pcpus / len(a))
    slack = max(tolerance * share, 2 * SLICE_MS)
    return len(a) == len(b) and all(abs(x - share) <= slack for x in [*a, *b])


def compare(vcpus: int, pcpus: int, duration_ms: int, repeats: int) -> dict:
    rows = {"vcpusim": [], "simpy": []}
    for _ in range(repeats):
        rows["vcpusim"].append(run_vcpusim(vcpus, pcpus, duration_ms))
        rows["simpy"].append(run_simpy(vcpus, pcpus, duration_ms))
    out = {"vcpus": vcpus, "pcpus": pcpus, "duration_ms": duration_ms, "slice_ms": SLICE_MS,
           "repeats": repeats, "simpy_version": simpy.__version__}
    for name, runs in rows.items():
        rates = [r["events"] / max(r["cpu_s"], 1e-9) for r in runs]
        out[name] = {"events": runs[0]["events"], "events_per_s_median": statistics.median(rates),
                     "events_per_s_best": max(rates), "cpu_s_median": statistics.median(r["cpu_s"] for r in runs),
                     "cpu_time_ms": runs[0]["cpu_time_ms"]}
    out["ratio_events_per_s"] = out["vcpusim"]["events_per_s_median"] / out["simpy"]["events_per_s_median"]
    out["ratio_sim_time_per_cpu_s"] = out["simpy"]["cpu_s_median"] / max(out["vcpusim"]["cpu_s_median"], 1e-9)
    out["agree"] = agree(out["vcpusim"]["cpu_time_ms"], out["simpy"]["cpu_time_ms"], duration_ms, pcpus)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vcpus", type=int, default=64)
    ap.add_argument("--pcpus", type=int, default=16)
    ap.add_argument("--duration", default="20s", help="simulated time, e.g. 20s or 500ms")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    text = args.duration.strip()
    duration_ms = int(float(text[:-2])) if text.endswith("ms") else int(float(text.rstrip("s")) * 1000)
    if args.vcpus < 1 or args.pcpus < 1 or duration_ms < SLICE_MS or args.repeats < 1:
        ap.error(f"expected vcpus, pcpus, repeats >= 1 and a duration of at least {SLICE_MS}ms")
    out = compare(args.vcpus, args.pcpus, duration_ms, args.repeats)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{args.vcpus} vCPUs round-robin on {args.pcpus} pCPUs, {SLICE_MS} ms slice, {duration_ms} ms simulated, "
          f"{args.repeats} interleaved runs each (SimPy {out['simpy_version']})")
    for name in ("vcpusim", "simpy"):
        r = out[name]
        print(f"  {name:8} {r['events']:>10,} events  {r['events_per_s_median'] / 1e6:6.2f} M events/s (median; "
              f"best {r['events_per_s_best'] / 1e6:.2f})  {r['cpu_s_median']:.3f} s CPU")
    print(f"  vcpusim / SimPy events per second: {out['ratio_events_per_s']:.1f}x; "
          f"SimPy / vcpusim CPU time for the same simulated run: {out['ratio_sim_time_per_cpu_s']:.2f}x")
    print(f"  every vCPU gets its share in both: {'yes' if out['agree'] else 'NO'}")


if __name__ == "__main__":
    main()

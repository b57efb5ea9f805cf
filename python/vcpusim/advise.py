"""The placement advisor: which vCPU affinity should a VM get on this host?

For each ``[[vm]]`` of a scenario (or the ones named), :func:`advise` builds candidate
affinities from the host's topology (the loader's ``topology``: socket, NUMA node, sibling group
= CMT module or core, and LLC of every pCPU), simulates the scenario once per candidate with
only that VM's ``cpus`` changed (the other VMs keep theirs), and ranks the candidates by the
VM's simulated throughput. The candidates, for a VM of ``n`` vCPUs:

- ``packed``: the first ``n`` pCPUs in host order (sibling groups filled before the next).
- ``spread``: ``n`` pCPUs dealt evenly over the sockets, consecutive within each (seed 001's
  ``8-8`` distribution for 16 vCPUs on two sockets).
- ``one-per-module``: one pCPU per sibling group (CMT module or SMT core) dealt round-robin over
  the NUMA nodes, siblings only once every group has one (seed 001 section IV-C's optimal
  affinity); offered only where sibling groups hold more than one pCPU.
- ``node-local``: every pCPU of the fewest NUMA nodes that hold ``n`` pCPUs (the nodes with the
  fewest pCPUs other VMs are pinned to first, then the lowest number).

The first four leave out pCPUs that other VMs are pinned to (their ``cpus``) when the rest
still hold ``n`` pCPUs.
- ``as-configured``: the scenario's own ``cpus`` for the VM, if it sets one.
- ``none``: no affinity (every pCPU).

Candidates with the same pCPU set are run once, under the first name. Where the policy takes
Xen's NUMA node affinity (``numa_placement``), a candidate affinity resets it (seed 001 section
IV-A: node affinity then follows the vCPU affinity), so the advice does not fall into the
conflict of section III-G.

Throughput is the VM's progress per simulated second: ``iterations / completion_time`` when it
finished, else ``progress / duration`` (summed over a ``count = N`` group). Each candidate runs
on ``seeds`` seeds (the scenario's seed and the next ones; 5 by default): its throughput is the
mean, with the 95% Student-t interval. The best candidate is the one with the highest mean (ties:
the earlier candidate). A candidate whose per-seed difference from the best is not beyond noise
(the interval of the paired differences holds zero: :mod:`vcpusim.stats`, the experiment
ledgers' test) is marked ``tie``, and the "why" line says so: no significant difference is
reported as one, not as a confident pick. The best's affinity is printed as an ``xl`` line and
as libvirt XML.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

from .api import Scenario, _type_name, as_scenario, check_flag

#: The candidate kinds, in the order they are built and printed.
CANDIDATES = ("packed", "spread", "one-per-module", "node-local", "as-configured", "none")


def cpulist(pcpus: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` as ``"0-2,5,7-8"`` (the form xl and libvirt take)."""
    ps = sorted(set(pcpus))
    parts, i = [], 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        parts.append(str(ps[i]) if i == j else f"{ps[i]}-{ps[j]}")
        i = j + 1
    return ",".join(parts)


def parse_cpulist(text: str) -> list[int]:
    """``"0-2,5"`` as ``[0, 1, 2, 5]`` (ranges and single pCPUs, as the scenario's ``cpus``)."""
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return sorted(set(out))


def _deal(groups: Sequence[Sequence[int]], n: int) -> list[int]:
    """Take ``n`` items round-robin from ``groups`` (each in its own order)."""
    out: list[int] = []
    cursors = [0] * len(groups)
    while len(out) < n and any(c < len(g) for c, g in zip(cursors, groups)):
        for k, g in enumerate(groups):
            if len(out) < n and cursors[k] < len(g):
                out.append(g[cursors[k]])
                cursors[k] += 1
    return out


def candidates(topology: Sequence[Mapping[str, int]], n: int, configured: list[int] | None = None,
               taken: Iterable[int] = ()) -> list[tuple[str, list[int]]]:
    """The candidate (name, pCPUs) pairs for a VM of ``n`` vCPUs on ``topology`` (see the module
    doc), duplicates of an earlier pCPU set dropped. ``taken`` are pCPUs other VMs are pinned
    to: the packed, spread, one-per-module and node-local candidates leave them out when the
    rest still hold ``n`` pCPUs (and node-local prefers the nodes with the fewest of them)."""
    taken = set(taken)
    every = sorted(topology, key=lambda pl: pl["pcpu"])
    places = [pl for pl in every if pl["pcpu"] not in taken]
    if len(places) < n:
        places = every
    busy_nodes: dict[int, int] = {}
    for pl in every:
        if pl["pcpu"] in taken:
            busy_nodes[pl["node"]] = busy_nodes.get(pl["node"], 0) + 1
    npcpus = len(places)
    n = max(1, min(n, npcpus))
    out: list[tuple[str, list[int]]] = [("packed", [pl["pcpu"] for pl in places[:n]])]

    sockets = sorted({pl["socket"] for pl in places})
    per_socket = [[pl["pcpu"] for pl in places if pl["socket"] == s] for s in sockets]
    share = [n // len(sockets) + (1 if k < n % len(sockets) else 0) for k in range(len(sockets))]
    spread = [p for k, group in enumerate(per_socket) for p in group[: share[k]]]
    if len(spread) < n:  # a socket ran short: top up in host order
        spread += [pl["pcpu"] for pl in places if pl["pcpu"] not in spread][: n - len(spread)]
    out.append(("spread", spread))

    modules: dict[int, list[int]] = {}
    for pl in places:
        modules.setdefault(pl["module"], []).append(pl["pcpu"])
    if any(len(m) > 1 for m in modules.values()):
        nodes = sorted({pl["node"] for pl in places})
        node_of = {pl["pcpu"]: pl["node"] for pl in places}
        # First pCPU of each module, dealt over the nodes; then second pCPUs the same way.
        rounds = max(len(m) for m in modules.values())
        picked: list[int] = []
        for r in range(rounds):
            by_node = [[m[r] for m in modules.values() if len(m) > r and node_of[m[0]] == node] for node in nodes]
            picked += _deal(by_node, n - len(picked))
        out.append(("one-per-module", picked))

    nodes = sorted({pl["node"] for pl in places}, key=lambda node: (busy_nodes.get(node, 0), node))
    chosen: list[int] = []
    for node in nodes:
        if len(chosen) >= n:
            break
        chosen += [pl["pcpu"] for pl in places if pl["node"] == node]
    out.append(("node-local", chosen))

    if configured:
        out.append(("as-configured", configured))
    out.append(("none", [pl["pcpu"] for pl in every]))

    seen: set[tuple[int, ...]] = set()
    unique = []
    for name, pcpus in out:
        key = tuple(sorted(pcpus))
        if key not in seen:
            seen.add(key)
            unique.append((name, sorted(pcpus)))
    return unique


def xl_line(pcpus: Sequence[int]) -> str:
    """The xl domain-configuration line (every vCPU may run on every listed pCPU)."""
    return f'cpus = "{cpulist(pcpus)}"'


def libvirt_xml(pcpus: Sequence[int], vcpus: int, memory_nodes: Sequence[int] | None = None) -> str:
    """The libvirt ``<cputune>`` element pinning each of ``vcpus`` vCPUs to the listed pCPUs, and
    with ``memory_nodes`` the ``<numatune>`` element that binds the guest's memory to them
    (``mode='strict'``: allocate only there)."""
    cpuset = cpulist(pcpus)
    pins = "\n".join(f"  <vcpupin vcpu='{v}' cpuset='{cpuset}'/>" for v in range(vcpus))
    xml = f"<cputune>\n{pins}\n</cputune>"
    if memory_nodes:
        xml += f"\n<numatune>\n  <memory mode='strict' nodeset='{cpulist(memory_nodes)}'/>\n</numatune>"
    return xml


def memory_nodes_for(pcpus: Sequence[int], topology: Sequence[Mapping[str, int]]) -> list[int] | None:
    """The NUMA nodes of ``pcpus``, where the VM's memory goes with them; None on a host of one
    node (nothing to choose)."""
    node_of = {pl["pcpu"]: pl["node"] for pl in topology}
    if len(set(node_of.values())) < 2:
        return None
    return sorted({node_of[p] for p in pcpus})


def _vm_entries(data: Mapping[str, Any]) -> list[dict]:
    vms = data.get("vm", [])
    return [vm for vm in vms if isinstance(vm, dict)] if isinstance(vms, list) else []


def _cpus_of(vm: Mapping[str, Any]) -> list[int]:
    """The pCPUs a ``[[vm]]`` entry's ``cpus`` names (one cpulist, or one per vCPU: their union)."""
    cpus = vm.get("cpus")
    lists = [cpus] if isinstance(cpus, str) else [c for c in cpus if isinstance(c, str)] if isinstance(cpus, list) else []
    return sorted({p for text in lists for p in parse_cpulist(text)})


def _throughput(rows, duration_s: float) -> float:
    """Progress per simulated second of one ``[[vm]]`` entry's rows of vms.csv."""
    total = 0.0
    for _, row in rows.iterrows():
        done = row.get("completion_time_ms")
        iterations = row.get("iterations")
        if done is not None and done == done and iterations is not None and iterations == iterations and done > 0:
            total += float(iterations) / (float(done) / 1000.0)
        else:
            total += float(row["progress"]) / duration_s
    return total


def _rows_of(vms, name: str, count: int | None):
    names = {name} if not count or count == 1 else {f"{name}-{i}" for i in range(count)}
    return vms[vms["vm"].isin(names)]


def _mean_col(rows, column: str) -> float | None:
    if column not in rows.columns or rows.empty:
        return None
    return float(rows[column].astype(float).mean())


def explain(name: str, pcpus: Sequence[int], topology: Sequence[Mapping[str, int]],
            competing: float | None, remote: float | None) -> str:
    """One line saying what the pick is and why it runs well."""
    competing = None if competing is None or competing != competing else competing
    remote = None if remote is None or remote != remote else remote
    node_of = {pl["pcpu"]: pl["node"] for pl in topology}
    module_of = {pl["pcpu"]: pl["module"] for pl in topology}
    nodes = sorted({node_of[p] for p in pcpus})
    shared = len(pcpus) - len({module_of[p] for p in pcpus})
    what = {
        "packed": "packed pCPUs",
        "spread": "pCPUs spread over the sockets",
        "one-per-module": "one core per module",
        "node-local": "whole NUMA nodes",
        "as-configured": "the configured affinity",
        "none": "no affinity",
    }[name]
    parts = [f"{what} ({cpulist(pcpus)}) across {len(nodes)} node{'s' if len(nodes) != 1 else ''}"]
    if competing is not None:
        parts.append(f"{competing:.1f} competing modules")
    elif shared:
        parts.append(f"{shared} module(s) shared by two allowed pCPUs")
    if remote is not None:
        parts.append("memory local" if remote < 0.005 else f"{remote:.0%} of run time off the memory's nodes")
    return ": ".join([parts[0], ", ".join(parts[1:])]) if len(parts) > 1 else parts[0]


#: Seeds per candidate by default: the experiment protocol's least (docs/validation.md).
DEFAULT_SEEDS = 5
#: A run whose VM makes less progress than this (in its workload's units) is too short to rank
#: candidates: its throughput moves by more than 1% with one unit.
MIN_PROGRESS = 100


def advise(scenario: "Scenario | Mapping[str, Any] | str | os.PathLike", vms: Sequence[str] | None = None,
           processes: int | None = None, progress: bool = False, out_dir: str | os.PathLike | None = None,
           seeds: int = DEFAULT_SEEDS, duration: str | None = None):
    """Simulate every candidate affinity of each VM (all ``[[vm]]`` entries, or those named in
    ``vms``) and return a pandas DataFrame, one row per (VM, candidate): ``vm``, ``candidate``,
    ``cpus`` (a cpulist), ``pcpus`` (how many), ``throughput`` (progress per simulated second),
    ``progress_unit``, ``competing_modules`` and ``remote_memory_share`` (when the run reports
    them; means over the seeds), ``throughput_lo`` / ``_hi`` (the mean's 95% interval over
    ``seeds`` seeds), ``seeds``, ``best`` (one True row per VM), ``tie`` (the best, and every
    candidate not worse than it beyond noise), ``xl`` and ``libvirt`` (the affinity as
    configuration) and ``why`` (one line, on the best row), ``progress`` (the VM's mean progress
    per run, in ``progress_unit``) and ``short`` (fewer than :data:`MIN_PROGRESS` units a run: too
    short to rank on, said in ``why``). ``duration`` ("2s") replaces the scenario's ``[run]
    duration`` for every candidate: long enough for the workload to make ``MIN_PROGRESS`` units of
    progress under every candidate. Runs go through :func:`vcpusim.run_many`
    (``processes``, ``out_dir`` as there), so a script calling this with ``processes > 1`` needs
    the ``if __name__ == "__main__":`` guard."""
    import pandas as pd

    from .runs import run_many

    from .stats import Estimate

    where = "advise"
    base = as_scenario(scenario)
    if duration is not None:
        if not isinstance(duration, str):
            raise TypeError(f"{where}: duration: expected a duration with a unit such as \"2s\", got {_type_name(duration)}")
        base = base.replace(duration=duration)
    check_flag(progress, "progress", where)
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= 1000:
        raise ValueError(f"{where}: seeds: expected a number of seeds from 1 to 1000, got {seeds!r}")
    first_seed = int(base.info["seed"])
    if vms is not None and (isinstance(vms, str) or not all(isinstance(v, str) for v in vms)):
        raise TypeError(f"{where}: vms: expected a list of [[vm]] names, got {_type_name(vms)}")
    data = base.to_dict()
    entries = _vm_entries(data)
    names = [str(vm.get("name")) for vm in entries]
    wanted = list(vms) if vms is not None else names
    unknown = [v for v in wanted if v not in names]
    if unknown:
        raise ValueError(f"{where}: vms: no [[vm]] named {unknown[0]!r} (entries: {', '.join(names)})")
    topology = base.info["topology"]
    duration_s = base.duration_ns / 1e9
    has_numa_key = any("numa_placement" in vm for vm in entries)

    plans: list[tuple[str, str, list[int], list[int] | None, Scenario]] = []
    for vm in entries:
        name = str(vm.get("name"))
        if name not in wanted or vm.get("bare_metal") or vm.get("native"):
            continue
        vcpus = int(vm.get("vcpus", 1))
        configured = _cpus_of(vm) or None
        taken = [p for other in entries if other is not vm for p in _cpus_of(other)]
        for cand, pcpus in candidates(topology, vcpus, configured, taken):
            values: dict[str, Any] = {f"vm.{name}.cpus": cpulist(pcpus)}
            if has_numa_key or vm.get("numa_placement") is not None:
                values[f"vm.{name}.numa_placement"] = "off"
            # Memory follows the pCPUs (libvirt <numatune>), unless the VM places it itself or
            # runs anywhere.
            nodes = None if cand == "none" or "memory_nodes" in vm else memory_nodes_for(pcpus, topology)
            if nodes is not None:
                values[f"vm.{name}.memory_nodes"] = nodes
            plans.append((name, cand, pcpus, nodes, base.override(values, what=f"advise candidate {cand}")))

    seed_list = [first_seed + k for k in range(seeds)]
    runs = [p[4].replace(seed=sd) for p in plans for sd in seed_list]
    results = run_many(runs, processes=processes, progress=progress, out_dir=out_dir)
    counts = {str(vm.get("name")): vm.get("count") for vm in entries}
    vcpus_of = {str(vm.get("name")): int(vm.get("vcpus", 1)) for vm in entries}
    rows = []
    per_seed: list[list[float]] = []
    for i, (name, cand, pcpus, nodes, _) in enumerate(plans):
        mine = [_rows_of(r.vms, name, counts.get(name)) for r in results[i * seeds:(i + 1) * seeds]]
        values = [_throughput(vm_rows, duration_s) for vm_rows in mine]
        per_seed.append(values)
        est = Estimate.of(values)

        def mean_of(column: str):
            xs = [v for v in (_mean_col(vm_rows, column) for vm_rows in mine) if v is not None]
            return sum(xs) / len(xs) if xs else None

        rows.append({
            "vm": name,
            "candidate": cand,
            "cpus": cpulist(pcpus),
            "pcpus": len(pcpus),
            "memory_nodes": cpulist(nodes) if nodes else "",
            "throughput": est.mean,
            "throughput_lo": est.lo,
            "throughput_hi": est.hi,
            "seeds": seeds,
            "progress_unit": str(mine[0]["progress_unit"].iloc[0]) if not mine[0].empty else "",
            "competing_modules": mean_of("competing_modules"),
            "remote_memory_share": mean_of("remote_memory_share"),
            "progress": sum(float(vm_rows["progress"].astype(float).sum()) for vm_rows in mine) / len(mine),
        })
    table = pd.DataFrame(rows, columns=["vm", "candidate", "cpus", "pcpus", "memory_nodes", "throughput", "throughput_lo",
                                        "throughput_hi", "seeds", "progress_unit", "competing_modules",
                                        "remote_memory_share", "progress"])
    table["short"] = table["progress"] < MIN_PROGRESS
    table["best"] = False
    table["tie"] = False
    table["xl"] = [xl_line(parse_cpulist(c)) for c in table["cpus"]]
    table["libvirt"] = [libvirt_xml(parse_cpulist(c), vcpus_of[v], parse_cpulist(m) if m else None)
                        for v, c, m in zip(table["vm"], table["cpus"], table["memory_nodes"])]
    table["why"] = ""
    for name in dict.fromkeys(table["vm"]):
        mine = table[table["vm"] == name]
        # idxmax keeps the first of equal maxima: the earlier candidate wins a tie.
        best = mine["throughput"].idxmax()
        table.loc[best, "best"] = True
        # Ties: candidates whose per-seed throughput (the same seeds: paired) is not below the
        # best's beyond noise. With one seed there is no interval: nothing is told apart.
        tied = []
        for i in mine.index:
            diff = Estimate.of([b - x for b, x in zip(per_seed[best], per_seed[i])])
            if i == best or not diff.excludes(0.0):
                table.loc[i, "tie"] = True
                if i != best:
                    tied.append(table.loc[i, "candidate"])
        row = table.loc[best]
        why = explain(row["candidate"], parse_cpulist(row["cpus"]), topology,
                      row["competing_modules"], row["remote_memory_share"])
        if tied:
            noise = f"over {seeds} seeds" if seeds > 1 else "with one seed (no interval)"
            why += f"; no significant difference from {', '.join(tied)} ({noise})"
        short = mine[mine["short"]]
        if not short.empty:
            least = short.loc[short["progress"].idxmin()]
            why += (f"; runs too short to rank on: {least['candidate']} makes {least['progress']:.0f} "
                    f"{least['progress_unit'] or 'units'} a run (fewer than {MIN_PROGRESS}): lengthen the run "
                    f"(--duration, or [run] duration)")
        table.loc[best, "why"] = why
    return table

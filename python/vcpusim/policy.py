"""Scheduling policies written in Python.

Subclass :class:`Policy` and answer the engine's callbacks; run it with
``vcpusim.run(scenario, policy=MyPolicy())`` or name it in a scenario as
``policy = "python:my_module:MyPolicy"`` (then ``[host.params]`` go to its constructor, and
``run_many``, ``sweep`` and Ray workers import the class by that name)::

    class RoundRobin(vcpusim.Policy):
        params = {"slice": "10ms"}              # constructor arguments and their defaults

        def __init__(self, slice=10_000_000):    # a duration arrives in ns
            self.slice, self.queue = slice, []

        def insert_vcpu(self, host, v):
            self.wake(host, v, None)

        def wake(self, host, v, waker):
            self.queue.append(v)
            idle = [p for p in host.pcpus if host.current(p) is None and host.may_run(v, p)]
            if idle:
                host.reschedule(idle[0])

        def do_schedule(self, host, p):
            prev = host.current(p)
            for i, v in enumerate(self.queue):
                if host.may_run(v, p):
                    del self.queue[i]
                    if prev is not None and host.state(prev) == "running":
                        self.queue.append(prev)
                    return v, self.slice
            return (prev, self.slice) if prev is not None and host.state(prev) == "running" else None

The callbacks are those of the Rust interface (``vcpusim::policy::Policy``, Xen's
``struct scheduler``), with the same names. vCPUs, pCPUs and VMs are integers (host-wide ids);
times are integer ns. ``host`` (a ``vcpusim.Host``) is the host as the policy sees it during
the callback, and the way to ask for things: it is valid only during the call it is passed to.

Life of a vCPU: ``insert_vcpu`` (runnable) → chosen by ``do_schedule`` (running) → either
preempted by a later ``do_schedule`` on its pCPU that returns another vCPU (runnable again: keep
it queued), or ``sleep`` (halted: drop it) and ``do_schedule`` on its pCPU, and later ``wake``
(runnable). ``yield_vcpu`` precedes a ``do_schedule`` on the yielder's pCPU.

What the engine checks at every decision: ``do_schedule(host, p)`` returns the vCPU running on
``p`` (still running), or a runnable vCPU of this pool that may run on ``p``, or None, and never
a zero slice. Anything else stops the run with :class:`vcpusim.PolicyError`, naming the call and
the decision. An exception a callback raises stops the run and propagates from ``vcpusim.run``
with its traceback and a note of the callback and the simulated time.

A policy can do nothing a Rust policy cannot: it sees no guest state, only the host view.
``host.random`` is its own ``random.Random``, seeded from the run's seed: the same seed gives
the same bytes. Callbacks a class does not override are not called at all (no cost).
"""

from __future__ import annotations

import abc
import hashlib
import importlib.util
import re
from typing import Any

#: A Python policy's name in a scenario's text: ``python:<module>:<Class>``.
_NAME = re.compile(r"python:([A-Za-z_][\w.]*):([A-Za-z_][\w.]*)")


class Policy(abc.ABC):
    """Base class of a hypervisor scheduling policy written in Python.

    Every policy defines ``insert_vcpu``, ``wake`` and ``do_schedule`` (abstract: a class without
    them cannot be made, and a scenario naming it is refused); the other callbacks are optional.
    Class attributes: ``params`` (a dict of constructor argument to default: a bool, an integer
    ≥ 0, a float, or a duration string such as ``"30ms"``, passed in ns), ``vm_params`` (the
    same for per-VM settings: a VM's ``[vm.sched]`` table sets them, checked against this dict,
    and ``host.vm_params(vm)`` reads them from the VM's ``adjust`` on), ``hypervisor``
    (``"xen"``, the default, or ``"kvm"``: the paravirtual interfaces the guests see, and the
    pause-loop window: Xen keeps it fixed, KVM grows it) and ``honours_cap`` (whether a VM's
    ``cap`` may be set under this policy).
    """

    params: dict[str, Any] = {}
    vm_params: dict[str, Any] = {}
    hypervisor: str = "xen"
    honours_cap: bool = False

    # -- what every policy answers -------------------------------------------------------------

    @abc.abstractmethod
    def insert_vcpu(self, host: Any, v: int) -> None:
        """vCPU ``v`` enters the pool, runnable (every vCPU, before the first ``do_schedule``)."""

    @abc.abstractmethod
    def wake(self, host: Any, v: int, waker: int | None) -> None:
        """Halted vCPU ``v`` became runnable: queue it and ``host.reschedule`` a pCPU if it should
        run soon. ``waker`` is the pCPU whose guest caused the wake-up (an IPI's sender), or None."""

    @abc.abstractmethod
    def do_schedule(self, host: Any, p: int) -> int | tuple[int | None, int | None] | None:
        """What runs next on pCPU ``p``: None (idle), a vCPU, or ``(vCPU or None, slice_ns or
        None)``; with a slice, ``do_schedule(host, p)`` is called again after it."""

    # -- optional ------------------------------------------------------------------------------

    def adjust(self, host: Any, vm: int, weight: int, cap: int) -> None:
        """The scheduling settings of VM ``vm`` (``[[vm]] weight`` and ``cap``, percent of one
        pCPU, 0 for none): called for every VM before any vCPU is inserted."""

    def sleep(self, host: Any, v: int) -> None:
        """The running vCPU ``v`` halted; ``do_schedule`` on its pCPU follows."""

    def yield_vcpu(self, host: Any, v: int, reason: str, target: int | None) -> None:
        """The running vCPU ``v`` yields (``reason``: ``"pause-loop"``, ``"hypercall"`` or
        ``"directed"``, to ``target``); ``do_schedule`` on its pCPU follows."""

    def on_timer(self, host: Any, key: int) -> None:
        """The timer ``key`` armed with ``host.set_timer(key, at)`` fired."""

    def ipi_sent(self, host: Any, sender: int, target: int, kind: str) -> None:
        """The guest on vCPU ``sender`` sent an IPI (``kind``: ``"resched"`` or ``"tlb"``) to
        vCPU ``target`` (the send exits to the hypervisor)."""

    def ipi_send_started(self, host: Any, v: int) -> None:
        """Running vCPU ``v`` starts preparing an IPI (its first APIC access exits)."""

    def ipi_handled(self, host: Any, v: int, kind: str) -> None:
        """vCPU ``v`` finished handling an IPI of this kind (its EOI exits)."""

    def pick_pcpu(self, host: Any, v: int) -> int | None:
        """Where ``v`` should run when the host moves it into this pool (the default: its last
        pCPU if allowed, else the first allowed one)."""

    def adjust_affinity(self, host: Any, v: int) -> None:
        """``v``'s affinity changed: move it if it is queued where it may no longer run."""

    def remove_vcpu(self, host: Any, v: int) -> None:
        """``v`` leaves this pool: drop it from every queue. With ``remove_pcpu`` and
        ``add_pcpu``, lets the pool change (``[[host.pool_change]]``)."""

    def remove_pcpu(self, host: Any, p: int) -> None:
        """pCPU ``p`` leaves this pool: re-place what was queued there."""

    def add_pcpu(self, host: Any, p: int) -> None:
        """pCPU ``p`` joins this pool, idle; ``do_schedule`` on it follows."""

    def check(self, host: Any) -> str | None:
        """Check mode (``check=True``): this policy's own invariants after every event; return
        None, or a message saying what is wrong. ``host`` is read-only here."""
        return None


def policy_name(policy: Any) -> str:
    """The scenario name of a :class:`Policy` subclass or instance: ``python:<module>:<Class>``."""
    cls = policy if isinstance(policy, type) else type(policy)
    return f"python:{cls.__module__}:{cls.__qualname__}"


def sources_fingerprint(text: str) -> str:
    """A hash of the source files of the modules holding the Python policies ``text`` names
    (``python:<module>:<Class>``), or ``""`` when it names none: saved runs are keyed by it, so
    that a changed policy is run again. A module that cannot be found counts as empty."""
    modules = sorted({m.group(1) for m in _NAME.finditer(text)})
    if not modules:
        return ""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(module.encode() + b"\0")
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        if origin and origin not in ("built-in", "frozen"):
            try:
                with open(origin, "rb") as f:
                    digest.update(f.read())
            except OSError:
                pass
        digest.update(b"\0")
    return digest.hexdigest()

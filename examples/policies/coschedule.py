"""Co-scheduling with backfill, in the spirit of Ousterhout's gang scheduling: time is cut into
slots, each slot belongs to one VM in turn, and that VM's vCPUs all run together on their home
pCPUs; a pCPU its VM leaves free (a halted vCPU, a VM smaller than the host) runs another vCPU
homed there. Each vCPU has one home pCPU, so a gang's vCPUs never wait for one another to
migrate.

    vcpusim.run("scenarios/quickstart.toml", policy=CoSchedule())
or, in a scenario (with this folder on PYTHONPATH):  policy = "python:coschedule:CoSchedule"
"""

import vcpusim


class CoSchedule(vcpusim.Policy):
    """Slots owned by one VM in turn, its vCPUs run together; free pCPUs backfilled."""

    params = {"slot": "30ms"}

    def __init__(self, slot=30_000_000):
        self.slot = slot
        self.vms = []      # VMs in turn order
        self.next_home = 0  # where the next VM's vCPU 0 lives
        self.home = {}     # vCPU -> its pCPU
        self.waiting = {}  # pCPU -> runnable vCPUs homed there, not running, oldest first
        self.turn = 0      # index in self.vms of the VM owning the slot

    def adjust(self, host, vm, weight, cap):
        if vm not in self.vms:
            self.vms.append(vm)
            pcpus = host.pcpus
            for i, v in enumerate(host.vm_vcpus(vm)):
                self.home[v] = pcpus[(self.next_home + i) % len(pcpus)]
            self.next_home += len(host.vm_vcpus(vm))

    def insert_vcpu(self, host, v):
        if not self.waiting:
            host.set_timer(0, host.now + self.slot)  # the first slot ends
        self.wake(host, v, None)

    def wake(self, host, v, waker):
        p = self.home[v]
        self.waiting.setdefault(p, []).append(v)
        if host.vm(v) == self.vms[self.turn] or host.current(p) is None:
            host.reschedule(p)

    def on_timer(self, host, key):
        self.turn = (self.turn + 1) % len(self.vms)
        host.set_timer(0, host.now + self.slot)
        for p in host.pcpus:
            host.reschedule(p)

    def do_schedule(self, host, p):
        queue = self.waiting.setdefault(p, [])
        prev = host.current(p)
        if prev is not None and host.state(prev) == "running":
            queue.append(prev)  # a candidate like the others, at the back
        owner = self.vms[self.turn]
        pick = next((v for v in queue if host.vm(v) == owner), queue[0] if queue else None)
        if pick is None:
            return None
        queue.remove(pick)
        return pick, self.slot

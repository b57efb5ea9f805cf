"""Round robin: one FIFO of runnable vCPUs, a fixed slice, a woken vCPU sent to an idle pCPU.

    vcpusim.run("scenarios/quickstart.toml", policy=RoundRobin())
or, in a scenario (with this folder on PYTHONPATH):  policy = "python:round_robin:RoundRobin"
"""

import vcpusim


class RoundRobin(vcpusim.Policy):
    """One FIFO of runnable vCPUs and a fixed slice."""

    params = {"slice": "10ms"}

    def __init__(self, slice=10_000_000):
        self.slice = slice
        self.queue = []  # runnable vCPUs not running, oldest first

    def insert_vcpu(self, host, v):
        self.wake(host, v, None)

    def wake(self, host, v, waker):
        self.queue.append(v)
        for p in host.pcpus:
            if host.current(p) is None and host.may_run(v, p):
                host.reschedule(p)
                break

    def do_schedule(self, host, p):
        prev = host.current(p)
        if prev is not None and host.state(prev) != "running":
            prev = None  # it halted
        for i, v in enumerate(self.queue):
            if host.may_run(v, p):
                del self.queue[i]
                if prev is not None:
                    self.queue.append(prev)
                return v, self.slice
        return (prev, self.slice) if prev is not None else None

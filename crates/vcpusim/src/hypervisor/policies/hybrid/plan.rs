//! Scheduling and balancing: seed 004 (004_2f4d1756ca892fd2.txt) section 5.5, Algorithm 4, run at
//! every slot boundary after dissipation and allocation, plus the mid-slot decisions a real host
//! also has to make (a vCPU halts or wakes inside a slot), which the seed's always-busy model does
//! not need.
//!
//! Passes over the pCPUs at a slot boundary:
//! 0. PCPS: a master whose VM completed `ceil(1/uf)` co-scheduled slots runs alone on its pCPU for
//!    one more slot (Algorithm 4 line 6).
//! 1. Algorithm 4 lines 1-9, pCPU by pCPU in index order: if the head of the run queue has PE > 0,
//!    either it is a concurrent VM's master and its whole VM is co-scheduled, each vCPU on its own
//!    pCPU (the "IPIs" of line 5 take those pCPUs, also from vCPUs picked there earlier in this
//!    pass), or the first high-throughput vCPU of the queue with PE > 0 runs. Then (pass 1b) a
//!    concurrent VM whose leader has PE > 0 but queues behind another concurrent VM's vCPU starts
//!    if all its pCPUs are still free.
//! 2. Algorithm 4 lines 10-12, balancing: a concurrent VM with PE > 0 left waiting moves, whole,
//!    onto pCPUs held by no co-scheduled VM and by no high-throughput vCPU of more PE (keeping its
//!    queues distinct) and starts there if there are enough; then a pCPU still without a vCPU
//!    takes the queued high-throughput vCPU of largest positive PE from another queue and
//!    migrates it to its own. Then (pass 2b, line 7 as written) a pCPU whose head is a waiting
//!    concurrent vCPU with PE > 0 runs its first high-throughput vCPU even in debt, up to one
//!    allocation's worth.
//! 3. Work-conserving mode only: a pCPU still empty runs the best local candidate whatever its PE
//!    (a high-throughput vCPU, or a concurrent VM's master if its whole VM fits on pCPUs still
//!    empty), else steals the high-throughput vCPU of largest PE.
//!
//! Inside a slot (`pick_mid_slot`, `place_woken`, `yield_slot`): a pCPU whose vCPU halted, or
//! made a pause-loop exit, runs another high-throughput vCPU for the rest of the slot; a woken
//! vCPU runs at once only where nothing runs (or rejoins its co-scheduled VM).
//!
//! Every queue change keeps Algorithm 1's distinct run queues (checked by `Hybrid::check`).

use super::{allocation, Hybrid};
use crate::hypervisor::policy::{HostView, PolicyCtx};
use crate::ids::{PcpuId, VcpuId, VmId};

/// How much PE a vCPU needs to be picked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    Positive,
    /// PE above minus the given amount: a debt that later allocations repay.
    Above(i64),
    Any,
}

impl Need {
    fn admits(self, pe: i64) -> bool {
        match self {
            Need::Positive => pe > 0,
            Need::Above(floor) => pe > floor,
            Need::Any => true,
        }
    }
}

impl Hybrid {
    /// Whether some pCPU picked `v` for this slot (O(1): `Hybrid::assign` keeps the count).
    fn is_assigned(&self, v: VcpuId) -> bool {
        self.vcpus[v.idx()].picked_by > 0
    }

    pub(super) fn is_hit_vcpu(&self, host: &HostView, v: VcpuId) -> bool {
        !self.is_concurrent(host, host.vcpu(v).vm)
    }

    /// Co-schedule `vm` this slot: every awake vCPU on its home pCPU. The homes of its halted vCPUs
    /// are claimed too (and lent to high-throughput vCPUs), so a member that wakes inside the slot
    /// rejoins at once. Refused if a home pCPU is already taken by another co-scheduled VM, or
    /// (`take_picked` false) by any pick.
    fn try_gang(&mut self, host: &HostView, vm: VmId, take_picked: bool) -> bool {
        let all: Vec<VcpuId> = host.vm(vm).vcpus.clone();
        let fits = all.iter().all(|v| {
            let p = &self.pcpus[self.vcpus[v.idx()].home.idx()];
            p.gang.is_none() && (take_picked || p.assigned.is_none())
        });
        if !fits || !all.iter().any(|v| self.vcpus[v.idx()].awake) {
            return false;
        }
        for v in &all {
            let awake = self.vcpus[v.idx()].awake;
            let home = self.vcpus[v.idx()].home.idx();
            self.assign(home, if awake { Some(*v) } else { None });
            self.pcpus[home].gang = Some(vm);
        }
        let d = &mut self.vms[vm.idx()];
        d.gang_slots += 1;
        if let Some(every) = allocation::extra_slot_interval(allocation::u_millionths(d.u_factor)) {
            if d.gang_slots.is_multiple_of(every) {
                d.extra_slot_next = true;
            }
        }
        true
    }

    /// The first high-throughput vCPU of `p`'s queue admitted by `need` and not picked yet. The
    /// queue is sorted by decreasing PE and `need` admits a PE or none below it, so the walk ends
    /// at the first vCPU it refuses (all behind it are refused too).
    fn first_local_hit(&self, host: &HostView, p: PcpuId, need: Need) -> Option<VcpuId> {
        self.pcpus[p.idx()]
            .runq
            .iter()
            .copied()
            .take_while(|v| need.admits(self.vcpus[v.idx()].pe))
            .find(|v| self.is_hit_vcpu(host, *v) && !self.is_assigned(*v))
    }

    /// Balancing (Algorithm 4 line 11): the queued high-throughput vCPU of largest PE on another
    /// pCPU, admitted by `need`, allowed on `p` by its hard affinity, not picked, and not running (a
    /// running vCPU cannot be moved until it is off its pCPU). Ties go to the lower pCPU, then to
    /// the queue order. (Concurrent VMs are balanced whole, by `migrate_waiting_gangs`.)
    ///
    /// A vCPU still running from the last slot may move at a boundary: every slot starts by
    /// choosing afresh for every pCPU (section 5.5), so it is not held by its old pCPU unless
    /// picked there again (then it is assigned). Inside a slot a running vCPU is always assigned
    /// to its pCPU.
    ///
    /// The steal index (steal.rs) holds the queued, unpicked high-throughput vCPUs in exactly that
    /// order, so the first one admitted on `p` is the answer; since `need` admits a PE or none
    /// below it, the walk stops at the first one it refuses. Skipped: those queued on `p` itself
    /// (`pick_hit` looked at them first) and those whose hard affinity excludes `p`.
    fn steal_candidate(&self, host: &HostView, p: PcpuId, need: Need) -> Option<VcpuId> {
        for key in self.steal.iter() {
            if !need.admits(key.pe.0) {
                return None;
            }
            if key.home != p && host.may_run(key.v, p) {
                return Some(key.v);
            }
        }
        None
    }

    /// Give an empty pCPU a high-throughput vCPU: local first, else stolen and migrated.
    fn pick_hit(&mut self, host: &HostView, p: PcpuId, need: Need) -> bool {
        if let Some(v) = self.first_local_hit(host, p, need) {
            self.assign(p.idx(), Some(v));
            return true;
        }
        if let Some(v) = self.steal_candidate(host, p, need) {
            self.migrate(v, p);
            self.assign(p.idx(), Some(v));
            return true;
        }
        false
    }

    /// Balancing for concurrent VMs (Algorithm 4 lines 10-12 applied to a whole VM): a
    /// concurrent VM with PE > 0 that is not co-scheduled this slot moves its vCPUs to pCPUs that
    /// no co-scheduled VM holds and whose high-throughput pick (or first candidate) has less PE
    /// than its leader, and starts there, if there are enough of them. Its vCPUs already homed on
    /// such pCPUs stay; the others move to the lowest-indexed free pCPUs homing no sibling, so
    /// its run queues stay distinct (line 11's runq(P_k) ∩ C(V) = ∅). VMs go in decreasing PE of
    /// their leader. Line 11 moves one vCPU per empty pCPU, the one of largest PE; moving a VM's
    /// vCPUs together is what lets it run co-scheduled there. This gives concurrent VMs homed on
    /// the same pCPUs (Algorithm 1 cannot always avoid it) the pCPUs others leave, so their
    /// shares follow their weights.
    fn migrate_waiting_gangs(&mut self, host: &HostView) {
        let mut waiting: Vec<(i64, VmId)> = host
            .pool_vms()
            .filter(|vm| self.waits_for_gang(host, vm.id))
            .filter_map(|vm| self.leader(host, vm.id).map(|l| (self.vcpus[l.idx()].pe, vm.id)))
            .filter(|(pe, _)| *pe > 0)
            .collect();
        waiting.sort_by_key(|(pe, vm)| (std::cmp::Reverse(*pe), vm.0));
        for (pe, vm) in waiting {
            // A pCPU is free for it if no co-scheduled VM holds it and the high-throughput vCPU
            // picked there (or first in line) has less PE: line 11 takes the vCPU of largest PE.
            let free: Vec<PcpuId> = host
                .pcpu_ids()
                .filter(|p| {
                    let d = &self.pcpus[p.idx()];
                    let local = d.assigned.or_else(|| self.first_local_hit(host, *p, Need::Positive));
                    d.gang.is_none() && local.is_none_or(|h| self.vcpus[h.idx()].pe < pe)
                })
                .collect();
            let members = host.vm(vm).vcpus.clone();
            let homes: Vec<PcpuId> = members.iter().map(|v| self.vcpus[v.idx()].home).collect();
            // Those homed on free pCPUs stay; the others take, in index order, the first free
            // pCPU homing no sibling that their hard affinity allows.
            let mut plan: Vec<Option<PcpuId>> = homes.iter().map(|h| free.contains(h).then_some(*h)).collect();
            let mut used: Vec<PcpuId> = Vec::new();
            for (i, v) in members.iter().enumerate() {
                if plan[i].is_some() {
                    continue;
                }
                match free.iter().copied().find(|p| !homes.contains(p) && !used.contains(p) && host.may_run(*v, *p)) {
                    Some(p) => {
                        plan[i] = Some(p);
                        used.push(p);
                    }
                    None => break,
                }
            }
            if plan.iter().any(|p| p.is_none()) {
                // With affinity the greedy pass may miss a placement that exists: augmenting
                // paths over the free pCPUs decide (without affinity it never misses one).
                if !members.iter().any(|v| host.is_pinned(*v)) {
                    continue;
                }
                let start: Vec<Option<PcpuId>> = homes.iter().map(|h| free.contains(h).then_some(*h)).collect();
                plan = Self::distinct_homes(host, &members, &start, &free);
                if plan.iter().any(|p| p.is_none()) {
                    continue;
                }
            }
            for (v, p) in members.iter().zip(plan) {
                self.rehome(*v, p.expect("every member placed"));
            }
            let started = self.try_gang(host, vm, true);
            debug_assert!(started, "a concurrent VM moved onto free pCPUs starts there");
        }
    }

    /// `vm` is concurrent and not co-scheduled this slot.
    fn waits_for_gang(&self, host: &HostView, vm: VmId) -> bool {
        self.is_concurrent(host, vm) && !self.pcpus.iter().any(|p| p.gang == Some(vm))
    }

    /// Co-schedule `vm` on pCPUs nobody took this slot if its leader has PE > 0.
    fn start_waiting_gang(&mut self, host: &HostView, vm: VmId) -> bool {
        let leader_ready = self.leader(host, vm).is_some_and(|l| self.vcpus[l.idx()].pe > 0);
        leader_ready && self.try_gang(host, vm, false)
    }

    /// Algorithm 4 for a new slot (every pCPU unassigned, `Hybrid::unassign_all`, and the steal
    /// index rebuilt); tickles every pCPU whose occupant changes.
    pub(super) fn plan_slot(&mut self, ctx: &mut PolicyCtx) {
        let host = ctx.host;
        debug_assert!(self.pcpus.iter().all(|p| p.assigned.is_none() && p.gang.is_none()));

        // Pass 0: PCPS extra slots.
        for vm in host.pool_vms() {
            if !std::mem::take(&mut self.vms[vm.id.idx()].extra_slot_next) {
                continue;
            }
            let master = vm.vcpus[0];
            if self.is_concurrent(&host, vm.id) && self.vcpus[master.idx()].awake {
                let home = self.vcpus[master.idx()].home.idx();
                self.assign(home, Some(master));
                self.pcpus[home].gang = Some(vm.id);
            }
        }

        // Pass 1: Algorithm 4 lines 1-9. A pCPU whose head is a concurrent vCPU with PE > 0 that
        // cannot start its VM (a sibling waiting for its master) is remembered for pass 2b.
        let mut con_head = std::mem::take(&mut self.con_head);
        con_head.clear();
        con_head.resize(host.pcpus.len(), false);
        for p in host.pcpu_ids() {
            if self.pcpus[p.idx()].gang.is_some() {
                continue;
            }
            let Some(&head) = self.pcpus[p.idx()].runq.first() else { continue };
            if self.vcpus[head.idx()].pe <= 0 {
                continue;
            }
            let vm = host.vcpu(head).vm;
            if self.is_concurrent(&host, vm) {
                if self.leader(&host, vm) == Some(head) && self.try_gang(&host, vm, true) {
                    continue;
                }
                con_head[p.idx()] = true;
            }
            let pick = self.first_local_hit(&host, p, Need::Positive);
            self.assign(p.idx(), pick);
        }

        // Pass 1b: a concurrent VM whose leader has PE > 0 but did not head its queue (it waits
        // behind another concurrent VM's vCPU there) starts if all its pCPUs are still free.
        for vm in host.pool_vms() {
            if self.waits_for_gang(&host, vm.id) {
                self.start_waiting_gang(&host, vm.id);
            }
        }

        // Pass 2: balancing, Algorithm 4 lines 10-12: concurrent VMs first (whole), then
        // high-throughput vCPUs one per empty pCPU.
        self.migrate_waiting_gangs(&host);
        for p in host.pcpu_ids() {
            if self.pcpus[p.idx()].assigned.is_none() && self.pcpus[p.idx()].gang.is_none() {
                self.pick_hit(&host, p, Need::Positive);
            }
        }

        // Pass 2b: Algorithm 4 line 7 as written. The head's PE > 0 (line 2) admits the pCPU, and
        // the first high-throughput vCPU of its queue runs whatever its own PE: its PE goes
        // negative and is repaid from later allocations, so over time shares still follow weights.
        // Without this a pCPU whose head is a sibling waiting for its master idles in capped mode
        // while the PE it stands for is lost (docs/model.md 7.5). Vouchers with positive PE (the
        // passes above) go first, so a vCPU owed time is not passed over for one in debt. The debt
        // is limited to one allocation's worth (PE_unit x L): deeper, it would reach the PE bound
        // and be forgiven, and in capped mode the VM would run beyond its cap.
        let debt_limit = Need::Above(-((self.cfg.pe_unit * self.cfg.allocation_slots) as i64));
        for p in host.pcpu_ids() {
            if con_head[p.idx()] && self.pcpus[p.idx()].assigned.is_none() && self.pcpus[p.idx()].gang.is_none() {
                let pick = self.first_local_hit(&host, p, debt_limit);
                self.assign(p.idx(), pick);
            }
        }
        self.con_head = con_head;

        // Pass 3: work-conserving mode lends the rest.
        if self.cfg.work_conserving {
            for p in host.pcpu_ids() {
                if self.pcpus[p.idx()].assigned.is_some() {
                    continue;
                }
                // A copy of the queue (kept between slots): starting a gang may move vCPUs.
                let mut queue = std::mem::take(&mut self.queue_copy);
                queue.clear();
                queue.extend_from_slice(&self.pcpus[p.idx()].runq);
                for &v in &queue {
                    let vm = host.vcpu(v).vm;
                    if !self.is_concurrent(&host, vm) {
                        if !self.is_assigned(v) {
                            self.assign(p.idx(), Some(v));
                            break;
                        }
                    } else if self.leader(&host, vm) == Some(v) && self.try_gang(&host, vm, false) {
                        break;
                    }
                }
                self.queue_copy = queue;
                if self.pcpus[p.idx()].assigned.is_none() {
                    self.pick_hit(&host, p, Need::Any);
                }
            }
        }

        for p in host.pcpu_ids() {
            if host.pcpu(p).current != self.pcpus[p.idx()].assigned {
                ctx.reschedule(p);
            }
        }
        // A vCPU migrated at this boundary may still be running on its old pCPU when its new one
        // decides (that one then idles for an instant); once every old pCPU has switched, a
        // second call starts it (requests are carried out in order).
        for p in host.pcpu_ids() {
            let moved = self.pcpus[p.idx()].assigned.and_then(|v| host.vcpu(v).pcpu).is_some_and(|q| q != p);
            if moved {
                ctx.reschedule(p);
            }
        }
    }

    /// A pCPU whose vCPU halted inside a slot: a high-throughput vCPU may use the rest of it.
    /// Concurrent VMs start co-scheduled slots only at boundaries.
    pub(super) fn pick_mid_slot(&mut self, host: &HostView, p: PcpuId) {
        if !self.pick_hit(host, p, Need::Positive) && self.cfg.work_conserving {
            self.pick_hit(host, p, Need::Any);
        }
    }

    /// `v` made a pause-loop exit (a yield) inside a slot. A high-throughput vCPU gives the rest
    /// of the slot to the vCPU its pCPU would pick after a halt ([`Self::pick_mid_slot`]: the
    /// first other vCPU of its queue with PE > 0, else one stolen, else, work-conserving, any),
    /// and keeps its place in its queue for the next pick; with no one else to run it keeps the
    /// pCPU. As credit's yield (Xen 4.1+ `__runq_insert` puts the yielder behind one
    /// lower-priority vCPU), this is what lets a preempted ticket-lock waiter queued on the
    /// same pCPU run instead of the spinners waiting for it (docs/model.md 7.5). A co-scheduled
    /// vCPU keeps its pCPU: its siblings all run (CPS runs them together for the slot).
    pub(super) fn yield_slot(&mut self, host: &HostView, v: VcpuId) {
        let home = self.vcpus[v.idx()].home;
        if self.pcpus[home.idx()].assigned != Some(v) || !self.is_hit_vcpu(host, v) {
            return;
        }
        // `v` stays assigned while the others are looked at, so no pick returns it; a pick
        // replaces it, no pick leaves it there.
        let _ = self.pick_hit(host, home, Need::Positive) || (self.cfg.work_conserving && self.pick_hit(host, home, Need::Any));
    }

    /// A vCPU woke inside a slot: a member of a VM co-scheduled now rejoins its siblings at once;
    /// a high-throughput vCPU runs at once if its pCPU, or another, is empty.
    pub(super) fn place_woken(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let host = ctx.host;
        let vm = host.vcpu(v).vm;
        let home = self.vcpus[v.idx()].home;
        if self.pcpus[home.idx()].gang == Some(vm) {
            self.assign(home.idx(), Some(v));
            ctx.reschedule(home);
            return;
        }
        if self.is_concurrent(&host, vm) {
            return;
        }
        let empty = |q: PcpuId| self.pcpus[q.idx()].assigned.is_none() && host.pcpu(q).current.is_none();
        if empty(home) {
            ctx.reschedule(home);
        } else if let Some(q) = self.unassigned.iter().find(|q| host.owns_pcpu(*q) && empty(*q) && host.may_run(v, *q)) {
            // The first pool pCPU, in index order, with no pick and nothing running: only those
            // without a pick are looked at (`unassigned`), not every pCPU.
            ctx.reschedule(q);
        }
    }
}

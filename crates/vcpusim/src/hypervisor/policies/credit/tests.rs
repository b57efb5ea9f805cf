//! Unit tests of the credit policy, with a fake host that plays the engine.

use super::version::Xen;
use super::*;
use crate::engine::event_queue::{EventId, EventQueue};
use crate::hardware::cpumask::CpuMask;
use crate::hardware::topology::Topology;
use crate::hypervisor::host_view::{Affinity, PoolFacts, PoolView, Scope};
use crate::hypervisor::policy::{PcpuInfo, Request, TimerId, TimerTable, VcpuInfo, VmInfo, VmSched};
use crate::hypervisor::uvf::UvfConfig;
use crate::ids::PoolId;

/// The idler mask of pCPUs `i` with `idle[i]` (tests write `prv->idlers` as a list of flags).
pub(super) fn idler_mask(idle: &[bool]) -> CpuMask {
    CpuMask::from_fn(idle.len(), |p| idle[p.idx()])
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ev {
    Slice(usize),
    Resched(usize),
    Timer(TimerId),
    Halt(usize),
    Wake(usize),
    Yield(usize),
}

/// Plays the engine: applies decisions, fires slices, timers and reschedules in time order.
pub(super) struct FakeHost {
    pub(super) policy: Credit,
    pub(super) vcpus: Vec<VcpuInfo>,
    pub(super) pcpus: Vec<PcpuInfo>,
    pub(super) vms: Vec<VmInfo>,
    pub(super) topo: Topology,
    pub(super) now: Nanos,
    /// Pending events, in time order then by push order (the engine's queue).
    pub(super) events: EventQueue<Ev>,
    /// The policy's timers (the engine's table).
    pub(super) timers: TimerTable,
    /// Each pCPU's pending slice end, cancelled by the next decision.
    pub(super) slice_event: Vec<Option<EventId>>,
    /// Run time per vCPU, charged when it leaves its pCPU (and by `run_times`).
    pub(super) run: Vec<Nanos>,
    /// Each VM's settings, handed to `adjust` by `start`.
    pub(super) sched: Vec<VmSched>,
    /// Pool and affinity tables handed to the policy as its `Scope` (`with_affinity`);
    /// `None` is the scope-less host of the other tests.
    pub(super) tables: Option<(PoolView, Vec<PoolId>, Vec<Affinity>)>,
}

pub(super) fn cfg() -> CreditConfig {
    CreditConfig::new(DEFAULT_TSLICE, DEFAULT_RATELIMIT, DEFAULT_LOAD_BALANCE_RATELIMIT, 0)
}

/// The default tunables as the loader resolves them for `xen` (`CreditKind::resolve_params`).
pub(super) fn cfg_for(xen: Xen) -> CreditConfig {
    cfg().with_xen(xen)
}

/// A hand-set host under `xen`: `nvcpus` vCPUs of one VM (weight 256) on `n` flat pCPUs, UNDER
/// except those in `over`; pCPU `p` runs `runs[p]` (since time 0) and queues `queues[p]` in that
/// order, and a vCPU named nowhere is halted. The engine's view agrees, so `check` holds.
pub(super) fn hand_set(xen: Xen, n: u32, nvcpus: u32, over: &[usize], runs: &[Option<usize>], queues: &[&[usize]]) -> FakeHost {
    let mut h = FakeHost::new(Topology::flat(n), &[(nvcpus, 256)], cfg_for(xen));
    h.adjust(0);
    h.call(|pol, ctx| pol.fit_to(&ctx.host));
    for _ in 0..nvcpus {
        h.policy.vcpus.push(CreditVcpu::new(VmId(0), PcpuId(0)));
    }
    for v in 0..nvcpus as usize {
        h.vcpus[v].state = VcpuState::Halted;
        if over.contains(&v) {
            h.policy.set_pri(VcpuId(v as u32), PRI_OVER);
        }
    }
    for p in 0..n as usize {
        // Every pCPU is online: the busy ones run, the others idle.
        h.policy.idlers.set(PcpuId(p as u32), runs[p].is_none());
        if let Some(v) = runs[p] {
            let svc = &mut h.policy.vcpus[v];
            (svc.processor, svc.awake) = (PcpuId(p as u32), true);
            h.policy.pcpus[p].curr = Some(VcpuId(v as u32));
            h.policy.idlers.set(PcpuId(p as u32), false);
            let info = &mut h.vcpus[v];
            (info.state, info.pcpu, info.last_pcpu) = (VcpuState::Running, Some(PcpuId(p as u32)), PcpuId(p as u32));
            h.pcpus[p].current = Some(VcpuId(v as u32));
        }
        for &v in queues[p] {
            let svc = &mut h.policy.vcpus[v];
            (svc.processor, svc.awake) = (PcpuId(p as u32), true);
            h.policy.runq_insert(VcpuId(v as u32));
            h.vcpus[v].state = VcpuState::Runnable;
            h.vcpus[v].last_pcpu = PcpuId(p as u32);
        }
    }
    h.check();
    h
}

/// `host` with the pool and affinity tables a test set, if any.
fn scoped<'a>(host: HostView<'a>, tables: &'a Option<(PoolView, Vec<PoolId>, Vec<Affinity>)>) -> HostView<'a> {
    match tables {
        Some((pool, vcpu_pool, affinity)) => host.scoped(Scope { pool, vcpu_pool, affinity, trivial: false }),
        None => host,
    }
}

impl FakeHost {
    /// `vms`: (number of vCPUs, weight) per VM.
    pub(super) fn new(topo: Topology, vms: &[(u32, u32)], cfg: CreditConfig) -> Self {
        Self::with_uvf(topo, vms, cfg, None)
    }

    /// Like `new`, with the urgent-vCPU-first overlay configured as `[host.uvf]` would.
    pub(super) fn with_uvf(topo: Topology, vms: &[(u32, u32)], cfg: CreditConfig, uvf: Option<UvfConfig>) -> Self {
        let npcpus = topo.npcpus() as u32;
        let (vcpus, vm_infos, sched) = crate::hypervisor::policies::test_host::vms_of(vms);
        let shape = HostShape { uvf, ..HostShape::new(npcpus, vcpus.len() as u32, vm_infos.len() as u32) };
        let n = vcpus.len();
        FakeHost {
            policy: Credit::new(cfg, shape),
            vcpus,
            pcpus: (0..npcpus).map(|p| PcpuInfo { id: PcpuId(p), current: None }).collect(),
            vms: vm_infos,
            topo,
            now: 0,
            events: EventQueue::new(),
            timers: TimerTable::default(),
            slice_event: vec![None; npcpus as usize],
            run: vec![0; n],
            sched,
            tables: None,
        }
    }

    /// One pool of every pCPU, and these hard and soft masks per vCPU.
    pub(super) fn with_affinity(mut self, masks: &[(&[u32], &[u32])]) -> Self {
        let n = self.pcpus.len();
        let m = |ps: &[u32]| if ps.is_empty() { CpuMask::full(n) } else { CpuMask::from_pcpus(ps.iter().map(|&p| PcpuId(p))) };
        let affinity = masks.iter().map(|(hard, soft)| Affinity::new(m(hard), m(soft))).collect();
        let pool = PoolView::new(PoolId(0), "pool0".into(), CpuMask::full(n));
        self.tables = Some((pool, vec![PoolId(0); self.vcpus.len()], affinity));
        self
    }

    /// Hand VM `vm`'s settings (`self.sched`) to the policy, as the engine does before the
    /// inserts and at a run-time change.
    pub(super) fn adjust(&mut self, vm: usize) {
        let sched = self.sched[vm].clone();
        self.call(|pol, ctx| pol.adjust(ctx, VmId(vm as u32), &sched));
    }

    pub(super) fn set_affinity(&mut self, v: usize, hard: &[u32], soft: &[u32]) {
        let n = self.pcpus.len();
        let m = |ps: &[u32]| if ps.is_empty() { CpuMask::full(n) } else { CpuMask::from_pcpus(ps.iter().map(|&p| PcpuId(p))) };
        self.tables.as_mut().expect("with_affinity first").2[v] = Affinity::new(m(hard), m(soft));
    }

    /// The pool's facts read from the tables and VMs, as the engine keeps them
    /// (`PoolView::facts`); before every call, since a test may change either in between.
    fn refresh_facts(&mut self) {
        if let Some((pool, vcpu_pool, affinity)) = self.tables.as_mut() {
            pool.facts = PoolFacts::of(pool, vcpu_pool, affinity, &self.vms);
        }
    }

    pub(super) fn push(&mut self, at: Nanos, ev: Ev) {
        self.events.push(at, ev);
    }

    pub(super) fn call<R>(&mut self, f: impl FnOnce(&mut Credit, &mut PolicyCtx) -> R) -> R {
        self.refresh_facts();
        let mut requests = Vec::new();
        let r = {
            let host = scoped(HostView::new(self.now, &self.vcpus, &self.pcpus, &self.vms, &self.topo), &self.tables);
            let mut ctx = PolicyCtx::new(host, &mut requests, &mut self.timers);
            f(&mut self.policy, &mut ctx)
        };
        for req in requests {
            match req {
                Request::Reschedule(p) => self.push(self.now, Ev::Resched(p.idx())),
                Request::SetTimer { timer, at } => {
                    let ev = self.events.push(at, Ev::Timer(timer));
                    if let Some(old) = self.timers.arm(timer, ev) {
                        self.events.cancel(old);
                    }
                }
                Request::StopTimer(timer) => {
                    if let Some(old) = self.timers.disarm(timer) {
                        self.events.cancel(old);
                    }
                }
                Request::UrgentEntered(_) => {}
                Request::MoveToPool(..) => panic!("the credit test host has one pool"),
                Request::Accelerate(..) | Request::CountUrgent(_) | Request::SkipYield(..) => {
                    panic!("the credit test host has no micro-sliced pool")
                }
                Request::Fail(_) => panic!("a built-in policy asked to stop the run"),
            }
        }
        r
    }

    pub(super) fn check(&self) {
        let host = scoped(HostView::new(self.now, &self.vcpus, &self.pcpus, &self.vms, &self.topo), &self.tables);
        if let Err(e) = self.policy.check(&host) {
            panic!("at t={}: {e}", self.now);
        }
    }

    pub(super) fn start(&mut self) {
        for vm in 0..self.vms.len() {
            self.adjust(vm);
        }
        for v in 0..self.vcpus.len() {
            self.call(|pol, ctx| pol.insert_vcpu(ctx, VcpuId(v as u32)));
        }
        for p in 0..self.pcpus.len() {
            self.schedule(p);
        }
    }

    pub(super) fn schedule(&mut self, p: usize) {
        let d = self.call(|pol, ctx| pol.do_schedule(ctx, PcpuId(p as u32)));
        let prev = self.pcpus[p].current;
        if let (Some(n), Some((_, _, affinity))) = (d.next, &self.tables) {
            // The engine's validate_decision.
            assert!(affinity[n.idx()].hard.contains(PcpuId(p as u32)), "do_schedule({p}) returned vCPU {n} outside its hard affinity");
        }
        if let Some(n) = d.next {
            let info = &self.vcpus[n.idx()];
            assert!(
                Some(n) == prev && info.state == VcpuState::Running || info.state == VcpuState::Runnable,
                "do_schedule({p}) returned vCPU {n} in state {:?}",
                info.state
            );
        }
        if prev != d.next {
            if let Some(c) = prev {
                let info = &mut self.vcpus[c.idx()];
                self.run[c.idx()] += self.now - info.run_start;
                info.pcpu = None;
                if info.state == VcpuState::Running {
                    info.state = VcpuState::Runnable;
                }
            }
            if let Some(n) = d.next {
                let info = &mut self.vcpus[n.idx()];
                info.state = VcpuState::Running;
                info.pcpu = Some(PcpuId(p as u32));
                info.last_pcpu = PcpuId(p as u32);
                info.run_start = self.now;
            }
            self.pcpus[p].current = d.next;
        }
        if let Some(old) = self.slice_event[p].take() {
            self.events.cancel(old);
        }
        if let Some(s) = d.slice {
            self.slice_event[p] = Some(self.events.push(self.now + s, Ev::Slice(p)));
        }
        self.check();
    }

    pub(super) fn run_until(&mut self, until: Nanos) {
        while self.events.peek_time().is_some_and(|at| at <= until) {
            let (at, ev) = self.events.pop().expect("peeked");
            self.now = at;
            match ev {
                Ev::Slice(p) => {
                    self.slice_event[p] = None;
                    self.schedule(p);
                }
                Ev::Resched(p) => self.schedule(p),
                Ev::Timer(timer) => {
                    if let Some((_owner, key)) = self.timers.fire(timer) {
                        self.call(|pol, ctx| pol.on_timer(ctx, key));
                        self.check();
                    }
                }
                Ev::Halt(v) => {
                    if let Some(p) = self.vcpus[v].pcpu {
                        self.vcpus[v].state = VcpuState::Halted;
                        self.call(|pol, ctx| pol.sleep(ctx, VcpuId(v as u32)));
                        self.schedule(p.idx());
                    }
                }
                Ev::Wake(v) => {
                    if self.vcpus[v].state == VcpuState::Halted {
                        self.vcpus[v].state = VcpuState::Runnable;
                        self.call(|pol, ctx| pol.wake(ctx, VcpuId(v as u32), None));
                        self.check();
                    }
                }
                Ev::Yield(v) => {
                    if let Some(p) = self.vcpus[v].pcpu {
                        self.call(|pol, ctx| pol.yield_vcpu(ctx, VcpuId(v as u32), YieldReason::PauseLoop));
                        self.schedule(p.idx());
                    }
                }
            }
        }
        self.now = until;
    }

    pub(super) fn run_times(&self) -> Vec<Nanos> {
        let mut run = self.run.clone();
        for info in &self.vcpus {
            if info.state == VcpuState::Running {
                run[info.id.idx()] += self.now - info.run_start;
            }
        }
        run
    }

    pub(super) fn vm_run_time(&self, vm: usize) -> Nanos {
        let run = self.run_times();
        self.vms[vm].vcpus.iter().map(|v| run[v.idx()]).sum()
    }

    pub(super) fn running_on(&self, p: usize) -> Option<usize> {
        self.pcpus[p].current.map(|v| v.idx())
    }

    pub(super) fn svc(&self, v: usize) -> &CreditVcpu {
        &self.policy.vcpus[v]
    }
}

#[test]
fn params_have_the_real_defaults() {
    let kind = CreditKind;
    assert_eq!(kind.name(), "credit");
    assert_eq!(kind.ple_grow(), 1);
    let specs = kind.params();
    let params = Params::defaults(&specs);
    let cfg = CreditConfig::from_params(&params);
    assert_eq!(cfg.tslice, 30 * MS);
    assert_eq!(cfg.tick_period, 10 * MS);
    assert_eq!(cfg.credits_per_tslice, 300);
    assert_eq!(cfg.ratelimit, MS);
    assert_eq!(cfg.load_balance_ratelimit, MS);
    let tslice = specs.iter().find(|s| s.name == "tslice").unwrap();
    assert!(tslice.parse(&toml::Value::String("0.5ms".into())).is_err());
    assert!(tslice.parse(&toml::Value::String("1s".into())).is_ok());
    // A 2 ms slice has one tick per slice (__csched_set_tslice); ratelimit is capped at tslice.
    let short = CreditConfig::new(2 * MS, 5 * MS, 0, 0);
    assert_eq!((short.tick_period, short.credits_per_tslice, short.ratelimit), (2 * MS, 20, 2 * MS));
    let policy = kind.build(&params, HostShape::new(2, 2, 1));
    assert_eq!(policy.name(), "credit");
}

#[test]
fn cycle_wraps_and_finds_itself() {
    let mask = [false, true, false, true];
    assert_eq!(cycle(1, &mask), Some(3));
    assert_eq!(cycle(3, &mask), Some(1));
    assert_eq!(cycle(0, &[true, false]), Some(0));
    assert_eq!(cycle(0, &[false, false]), None);
}

#[test]
fn weights_one_to_two_get_cpu_one_to_two() {
    let mut h = FakeHost::new(Topology::flat(4), &[(4, 256), (4, 512)], cfg());
    h.start();
    h.run_until(10 * SEC);
    let (a, b) = (h.vm_run_time(0) as f64, h.vm_run_time(1) as f64);
    assert!((a + b) >= 0.999 * 40.0 * SEC as f64, "pCPUs idled: {a} + {b}");
    let ratio = b / a;
    assert!((ratio - 2.0).abs() < 0.06, "VM run times {a} and {b}: ratio {ratio}, expected 2 within 3%");
}

#[test]
fn equal_weights_share_equally_when_overcommitted() {
    // Three 2-vCPU VMs on 2 pCPUs: each VM should get a third of the host.
    let mut h = FakeHost::new(Topology::flat(2), &[(2, 256), (2, 256), (2, 256)], cfg());
    h.start();
    h.run_until(10 * SEC);
    let total = 20.0 * SEC as f64;
    for vm in 0..3 {
        let share = h.vm_run_time(vm) as f64 / total;
        assert!((share - 1.0 / 3.0).abs() < 0.02, "VM {vm} got {share} of the host");
    }
}

/// Seed 004 section 6.2's setup scaled to 4 pCPUs: an idle manager VM (weight 256, its vCPUs
/// halt) beside a busy 4-vCPU VM of `weight`, non-work-conserving or not; the busy VM's share
/// of the host over 10 s.
fn busy_vm_share(weight: u32, work_conserving: bool) -> f64 {
    let mut config = cfg();
    config.work_conserving = work_conserving;
    let mut h = FakeHost::new(Topology::flat(4), &[(4, 256), (4, weight)], config);
    h.start();
    for v in 0..4 {
        h.push(0, Ev::Halt(v));
    }
    h.run_until(10 * SEC);
    assert!((0..4).all(|v| h.vcpus[v].state == VcpuState::Halted), "the manager VM idles");
    h.vm_run_time(1) as f64 / (40.0 * SEC as f64)
}

#[test]
fn caps_hold_a_domain_to_its_weight_share_and_work_conserving_does_not() {
    // Weight 128 beside 256: 128 / 384 = 1/3 of the host, though three quarters of it idle.
    let capped = busy_vm_share(128, false);
    assert!((capped - 1.0 / 3.0).abs() < 0.03, "capped share {capped}, expected 1/3");
    // Weight 512: 2/3.
    let capped = busy_vm_share(512, false);
    assert!((capped - 2.0 / 3.0).abs() < 0.03, "capped share {capped}, expected 2/3");
    // Work-conserving: the idle VM's share goes to the busy one.
    let free = busy_vm_share(128, true);
    assert!(free > 0.97, "work-conserving share {free}");
}

#[test]
fn a_parked_vcpu_is_neither_queued_nor_run_until_unparked() {
    let mut config = cfg();
    config.work_conserving = false;
    // One pCPU, a busy 1-vCPU VM of weight 64 beside an idle one of 192: capped at 25%.
    let mut h = FakeHost::new(Topology::flat(1), &[(1, 192), (1, 64)], config);
    h.start();
    h.push(0, Ev::Halt(0));
    let mut parked_seen = false;
    for step in 1..=300 {
        h.run_until(step * 10 * MS);
        if h.svc(1).parked {
            parked_seen = true;
            assert_eq!(h.running_on(0), None, "a parked vCPU does not run");
            assert!(h.svc(1).queued_on.is_none(), "nor wait in a run queue");
            // A wake of a parked vCPU does not queue it either.
            h.call(|pol, ctx| pol.wake(ctx, VcpuId(1), None));
            assert!(h.svc(1).queued_on.is_none());
        }
    }
    assert!(parked_seen, "the capped vCPU was parked");
    let share = h.vm_run_time(1) as f64 / (3.0 * SEC as f64);
    assert!((share - 0.25).abs() < 0.03, "capped share {share}");
}

#[test]
fn insert_spreads_vcpus_over_idle_pcpus() {
    let mut h = FakeHost::new(Topology::flat(4), &[(4, 256)], cfg());
    h.start();
    let running: Vec<_> = (0..4).map(|p| h.running_on(p)).collect();
    assert!(running.iter().all(|r| r.is_some()), "every pCPU should run a vCPU: {running:?}");
    let mut vs: Vec<_> = running.into_iter().flatten().collect();
    vs.sort();
    assert_eq!(vs, vec![0, 1, 2, 3]);
}

#[test]
fn runq_insert_lands_where_the_walk_does_whatever_the_priorities_became() {
    // Random inserts (yielding or not), removals, priority changes of queued vCPUs (as an
    // accounting period makes them) and sorts on one run queue: each insert lands where
    // `__runq_insert`'s walk from the head would put it, and the counts match the queue.
    let nv = 24;
    let mut h = FakeHost::new(Topology::flat(1), &[(nv, 256)], cfg());
    for _ in 0..nv {
        let mut svc = CreditVcpu::new(VmId(0), PcpuId(0));
        svc.awake = true;
        h.policy.vcpus.push(svc);
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    let levels = [PRI_BOOST, PRI_UNDER, PRI_OVER];
    let mut tail_inserts = 0;
    for step in 0..5_000 {
        let v = VcpuId(rnd(nv as u64) as u32);
        let queued = h.policy.vcpus[v.idx()].queued_on.is_some();
        match rnd(4) {
            0 | 1 if !queued => {
                h.policy.set_pri(v, levels[rnd(3) as usize]);
                h.policy.vcpus[v.idx()].yielding = rnd(3) == 0;
                let (pri, yielding) = (h.policy.vcpus[v.idx()].pri, h.policy.vcpus[v.idx()].yielding);
                let runq = h.policy.pcpus[0].runq.clone();
                let mut want = runq.clone();
                let mut at = runq.iter().position(|u| pri > h.policy.vcpus[u.idx()].pri).unwrap_or(runq.len());
                tail_inserts += u32::from(at == runq.len());
                if yielding && at < runq.len() {
                    at += 1;
                }
                want.insert(at, v);
                h.policy.runq_insert(v);
                assert_eq!(h.policy.pcpus[0].runq, want, "step {step}");
            }
            0 | 1 => h.policy.runq_remove(v),
            2 if queued => h.policy.set_pri(v, levels[rnd(3) as usize]),
            _ => {
                h.policy.runq_sort += 1;
                h.policy.runq_sort(0);
            }
        }
        assert_eq!(h.policy.pcpus[0].runq_pri, PriCounts::of(&h.policy.pcpus[0].runq, &h.policy.vcpus), "step {step}");
    }
    assert!(tail_inserts > 200, "too few inserts at the tail: {tail_inserts}");
}

#[test]
fn runq_is_fifo_within_priority_and_yield_goes_behind_one_lower() {
    let mut h = FakeHost::new(Topology::flat(1), &[(4, 256)], cfg());
    // Queue by hand on pCPU 0: a, b UNDER, c OVER.
    for v in 0..3 {
        let mut svc = CreditVcpu::new(VmId(0), PcpuId(0));
        svc.pri = if v == 2 { PRI_OVER } else { PRI_UNDER };
        svc.awake = true;
        h.policy.vcpus.push(svc);
    }
    let mut d = h.policy.vcpus[0].clone();
    d.pri = PRI_UNDER;
    h.policy.vcpus.push(d.clone());
    h.policy.runq_insert(VcpuId(2)); // OVER
    h.policy.runq_insert(VcpuId(0)); // UNDER goes ahead of OVER
    h.policy.runq_insert(VcpuId(1)); // UNDER behind the first UNDER (FIFO)
    assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(0), VcpuId(1), VcpuId(2)]);
    // A yielding UNDER vCPU goes behind one lower-priority (OVER) vCPU.
    h.policy.vcpus[3].yielding = true;
    h.policy.runq_insert(VcpuId(3));
    assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(0), VcpuId(1), VcpuId(2), VcpuId(3)]);
    // Taking it off the queue clears the flag; a BOOSTed vCPU goes to the front.
    h.policy.runq_remove(VcpuId(3));
    assert!(!h.policy.vcpus[3].yielding);
    h.policy.set_pri(VcpuId(3), PRI_BOOST);
    h.policy.runq_insert(VcpuId(3));
    assert_eq!(h.policy.pcpus[0].runq[0], VcpuId(3));
    // Sorting after an accounting period moves UNDERs ahead of OVERs, stably.
    h.policy.set_pri(VcpuId(0), PRI_OVER);
    h.policy.runq_sort += 1;
    h.policy.runq_sort(0);
    assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(3), VcpuId(1), VcpuId(0), VcpuId(2)]);
    // The next period's sort starts from an empty scratch list (it is kept between sorts).
    h.policy.set_pri(VcpuId(1), PRI_OVER);
    h.policy.set_pri(VcpuId(2), PRI_UNDER);
    h.policy.runq_sort += 1;
    h.policy.runq_sort(0);
    assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(3), VcpuId(2), VcpuId(1), VcpuId(0)]);
}

#[test]
fn burn_credits_charges_ten_per_ms_and_keeps_remainders() {
    let mut h = FakeHost::new(Topology::flat(1), &[(1, 256)], cfg());
    h.start();
    assert_eq!(h.running_on(0), Some(0));
    // Run 30 ms in bursts of 50 us: every 100 us of run time costs one credit in the end.
    let mut credit_before = h.svc(0).credit;
    let mut t = 0;
    for _ in 0..600 {
        t += 50 * US;
        h.policy.burn_credits(VcpuId(0), t);
    }
    assert_eq!(credit_before - h.svc(0).credit, 300);
    credit_before = h.svc(0).credit;
    h.policy.burn_credits(VcpuId(0), t + 10 * MS);
    assert_eq!(credit_before - h.svc(0).credit, 100);
}

#[test]
fn accounting_splits_by_weight_floors_and_retires() {
    // 2 pCPUs: 600 credits per period; one active vCPU per VM, weights 256 and 512.
    let mut h = FakeHost::new(Topology::flat(2), &[(1, 256), (1, 512)], cfg());
    h.start();
    let host_acct = |h: &mut FakeHost| h.call(|pol, ctx| pol.acct(ctx));
    let host_start = |h: &mut FakeHost, v: u32| {
        h.policy.acct_start(VcpuId(v));
    };
    host_start(&mut h, 0);
    host_start(&mut h, 1);
    assert_eq!(h.policy.weight, 768);
    h.policy.vcpus[0].credit = -150;
    h.policy.vcpus[1].credit = -250;
    host_acct(&mut h);
    // active_sdom order is VM1 then VM0 (list_add at the head). VM1's fair share
    // ceil(600*512/768) = 400 exceeds its peak of 300, so it gets 300 and the 100 left over
    // raise the total to 600 + ceil(100*768/256) = 900 for VM0: ceil(900*256/768) = 300,
    // capped at its peak of 300.
    assert_eq!(h.svc(1).credit, 50);
    assert_eq!(h.svc(0).credit, 150);
    assert_eq!((h.svc(0).pri, h.svc(1).pri), (PRI_UNDER, PRI_UNDER));
    // Next period: VM1 earns 300 again and passes +300, so it stops earning and its credit is
    // halved; VM0's deep debt is floored at -300 and makes it OVER.
    h.policy.vcpus[0].credit = -2000;
    host_acct(&mut h);
    assert!(!h.svc(1).active);
    assert_eq!(h.svc(1).credit, (50 + 300) / 2);
    assert_eq!((h.svc(0).credit, h.svc(0).pri), (-300, PRI_OVER));
    assert_eq!(h.policy.weight, 256);
    assert_eq!(h.policy.credit_balance, 175 - 300);
    // The negative balance (-125) is handed out on top of the 600: VM0 alone may now earn
    // 300 + 125, and the retired vCPU earns nothing.
    host_acct(&mut h);
    assert_eq!((h.svc(0).credit, h.svc(0).pri), (-300 + 425, PRI_UNDER));
    assert_eq!(h.svc(1).credit, 175);
    h.check();
}

/// One pCPU, two vCPUs: start, run `warmup`, then halt the running vCPU so the other takes
/// over. Returns (halted, running).
fn halt_the_runner(h: &mut FakeHost, warmup: Nanos) -> (usize, usize) {
    h.start();
    h.run_until(warmup);
    let r = h.running_on(0).unwrap();
    h.push(h.now, Ev::Halt(r));
    h.run_until(h.now);
    (r, 1 - r)
}

#[test]
fn waking_vcpu_is_boosted_and_preempts_after_the_ratelimit() {
    // One pCPU: vCPU 0 always busy, vCPU 1 halts and wakes.
    let mut h = FakeHost::new(Topology::flat(1), &[(2, 256)], cfg());
    // Let both run through some accounting so they are active and their priorities settle.
    let (r, other) = halt_the_runner(&mut h, 200 * MS);
    assert_eq!(h.running_on(0), Some(other));
    let started = h.now;
    // It wakes 200 us later: BOOST (if UNDER), but the runner is protected by the 1 ms ratelimit.
    h.policy.set_pri(VcpuId(r as u32), PRI_UNDER);
    h.policy.set_pri(VcpuId(other as u32), PRI_UNDER);
    h.push(started + 200 * US, Ev::Wake(r));
    h.run_until(started + 200 * US);
    assert_eq!(h.svc(r).pri, PRI_BOOST);
    assert_eq!(h.running_on(0), Some(other), "ratelimit keeps the runner");
    h.run_until(started + MS - 1);
    assert_eq!(h.running_on(0), Some(other));
    h.run_until(started + MS);
    assert_eq!(h.running_on(0), Some(r), "the boosted vCPU preempts once the ratelimit expires");
    // The next tick finds it running and drops the BOOST.
    h.run_until(started + 11 * MS);
    assert_ne!(h.svc(r).pri, PRI_BOOST);
}

#[test]
fn without_ratelimit_a_boosted_wake_preempts_at_once() {
    let cfg = CreditConfig::new(DEFAULT_TSLICE, 0, DEFAULT_LOAD_BALANCE_RATELIMIT, 0);
    let mut h = FakeHost::new(Topology::flat(1), &[(2, 256)], cfg);
    let (r, other) = halt_the_runner(&mut h, 100 * MS);
    h.policy.set_pri(VcpuId(r as u32), PRI_UNDER);
    h.policy.set_pri(VcpuId(other as u32), PRI_UNDER);
    h.push(h.now + 10 * US, Ev::Wake(r));
    h.run_until(h.now + 10 * US);
    assert_eq!(h.running_on(0), Some(r));
}

#[test]
fn wake_of_an_over_vcpu_is_not_boosted_and_does_not_preempt() {
    let mut h = FakeHost::new(Topology::flat(1), &[(2, 256)], cfg());
    let (r, other) = halt_the_runner(&mut h, 100 * MS);
    h.policy.set_pri(VcpuId(r as u32), PRI_OVER);
    h.policy.set_pri(VcpuId(other as u32), PRI_UNDER);
    let t = h.now + 5 * MS;
    h.push(t, Ev::Wake(r));
    h.run_until(t + 5 * MS);
    assert_eq!(h.svc(r).pri, PRI_OVER);
    assert_eq!(h.running_on(0), Some(other));
}

#[test]
fn wake_tickles_an_idle_pcpu_which_steals_the_vcpu() {
    // Two pCPUs, vCPU 0 busy on one, vCPU 1 halted; when 1 wakes on 0's pCPU, the idle pCPU
    // is tickled and steals it instead of preempting 0.
    let mut h = FakeHost::new(Topology::flat(2), &[(2, 256)], cfg());
    h.start();
    h.run_until(50 * MS);
    let p1 = h.vcpus[1].pcpu.unwrap().idx();
    h.push(h.now, Ev::Halt(1));
    h.run_until(h.now);
    assert_eq!(h.running_on(p1), None);
    // Pretend it last ran next to vCPU 0, so it is queued behind it.
    let p0 = h.vcpus[0].pcpu.unwrap();
    h.policy.vcpus[1].processor = p0;
    h.push(h.now + 3 * MS, Ev::Wake(1));
    h.run_until(h.now + 3 * MS);
    assert_eq!(h.running_on(p0.idx()), Some(0), "the busy vCPU is not preempted");
    assert_eq!(h.running_on(p1), Some(1), "the idle pCPU stole the woken vCPU");
}

#[test]
fn steal_takes_only_strictly_better_non_yielding_vcpus() {
    let mut h = FakeHost::new(Topology::flat(2), &[(4, 256)], cfg());
    h.start();
    // pCPU 0 and 1 run two vCPUs; two more wait. Move the waiters onto pCPU 0's queue.
    let waiting: Vec<usize> = (0..4).filter(|&v| h.vcpus[v].state == VcpuState::Runnable).collect();
    assert_eq!(waiting.len(), 2);
    for &v in &waiting {
        h.policy.runq_remove(VcpuId(v as u32));
    }
    for &v in &waiting {
        h.policy.vcpus[v].processor = PcpuId(0);
        h.policy.runq_insert(VcpuId(v as u32));
    }
    let (w0, w1) = (waiting[0], waiting[1]);
    // Same priority as the thief's best (UNDER vs UNDER): nothing to steal.
    let host = HostView::new(h.now, &h.vcpus, &h.pcpus, &h.vms, &h.topo);
    assert_eq!(h.policy.load_balance(&host, 1, PRI_UNDER), None);
    // The thief's best is OVER: the first UNDER waiter is taken, unless it yielded.
    h.policy.vcpus[w0].yielding = true;
    assert_eq!(h.policy.load_balance(&host, 1, PRI_OVER), Some(VcpuId(w1 as u32)));
    assert_eq!(h.svc(w1).processor, PcpuId(1));
    assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(w0 as u32)]);
}

#[test]
fn cpu_pick_prefers_own_idle_pcpu_then_idle_core() {
    // 2 cores x 2 threads. vCPU 0 last ran on pCPU 1.
    let topo = Topology::new(4, 1, 1, 2).unwrap();
    let mut h = FakeHost::new(topo, &[(1, 256)], cfg());
    h.policy.fit_to(&HostView::new(0, &h.vcpus, &h.pcpus, &h.vms, &h.topo));
    h.policy.idlers = CpuMask::full(4);
    let mut svc = CreditVcpu::new(VmId(0), PcpuId(1));
    svc.awake = true;
    h.policy.vcpus.push(svc);
    let host = HostView::new(0, &h.vcpus, &h.pcpus, &h.vms, &h.topo);
    // All idle: stays where it was.
    assert_eq!(h.policy.cpu_pick(&host, VcpuId(0), false), 1);
    // pCPU 1 busy with a queue, pCPU 0 (its SMT sibling) idle, core 1 (pCPUs 2, 3) fully idle:
    // the fully idle core wins over the half-busy one.
    h.policy.idlers.set(PcpuId(1), false);
    h.policy.pcpus[1].runq.push(VcpuId(0));
    let pick = h.policy.cpu_pick(&host, VcpuId(0), true);
    assert!(pick == 2 || pick == 3, "picked {pick}");
    // Only pCPU 0 idle: that is the choice.
    h.policy.idlers = idler_mask(&[true, false, false, false]);
    assert_eq!(h.policy.cpu_pick(&host, VcpuId(0), false), 0);
    // Nothing idle: stay.
    h.policy.idlers = CpuMask::empty();
    assert_eq!(h.policy.cpu_pick(&host, VcpuId(0), false), 1);
}

// ---- affinity (the balance steps of _csched_cpu_pick, __runq_tickle, csched_load_balance) ----

/// A host of `n` flat pCPUs with `nv` hand-made awake vCPUs of one VM (all on `processor`),
/// with the given masks; the policy has read its pool.
fn affine_host(n: u32, masks: &[(&[u32], &[u32])], processor: u32) -> FakeHost {
    let mut h = FakeHost::new(Topology::flat(n), &[(masks.len() as u32, 256)], cfg()).with_affinity(masks);
    h.call(|pol, ctx| pol.fit_to(&ctx.host));
    // Every pCPU online and idle.
    h.policy.idlers = CpuMask::full(n as usize);
    for _ in masks {
        let mut svc = CreditVcpu::new(VmId(0), PcpuId(processor));
        svc.awake = true;
        h.policy.vcpus.push(svc);
    }
    h
}

#[test]
fn xen_3_3_cpu_pick_on_a_host_without_idlers_keeps_an_allowed_processor_and_leaves_a_barred_one() {
    // Xen 3.3 csched_cpu_pick with no pCPU idle: the start pCPU is the only candidate, so the
    // answer is the processor when the vCPU may run there, else the next allowed pCPU after it
    // (the shortcut that skips the masks must give both).
    let mut h = FakeHost::new(Topology::flat(4), &[(1, 256)], cfg_for(Xen::V3_3)).with_affinity(&[(&[1, 2], &[])]);
    h.call(|pol, ctx| pol.fit_to(&ctx.host));
    let mut svc = CreditVcpu::new(VmId(0), PcpuId(2));
    svc.awake = true;
    h.policy.vcpus.push(svc);
    let pick = |h: &mut FakeHost| h.call(|pol, ctx| pol.cpu_pick(&ctx.host, VcpuId(0), false));
    h.policy.idlers = CpuMask::empty();
    assert_eq!(pick(&mut h), 2, "busy host, processor allowed: stay");
    h.policy.vcpus[0].processor = PcpuId(3);
    assert_eq!(pick(&mut h), 1, "busy host, processor outside hard affinity: the next allowed pCPU (wrapping)");
    h.policy.vcpus[0].processor = PcpuId(0);
    assert_eq!(pick(&mut h), 1, "the next allowed pCPU after pCPU 0");
    // One idle pCPU: the full walk runs, and 3.3 counts the start as idle ("cpu_set(cpu,
    // idlers)"), so a single idle core is not strictly more idle than it: stay; a barred
    // processor starts from the next allowed pCPU, which is the idle one.
    h.policy.vcpus[0].processor = PcpuId(1);
    h.policy.idlers = idler_mask(&[false, false, true, false]);
    assert_eq!(pick(&mut h), 1, "an idle core is no more idle than the start");
    h.policy.vcpus[0].processor = PcpuId(0);
    h.policy.idlers = idler_mask(&[true, false, false, false]);
    assert_eq!(pick(&mut h), 1, "an idle pCPU outside the affinity is never a candidate");
}

#[test]
fn cpu_pick_tries_soft_then_hard_and_never_leaves_hard() {
    // vCPU 0: hard {1, 2}, soft {2}, last on pCPU 0 (outside its hard affinity).
    let mut h = affine_host(4, &[(&[1, 2], &[2])], 0);
    let pick = |h: &mut FakeHost| h.call(|pol, ctx| pol.cpu_pick(&ctx.host, VcpuId(0), false));
    assert_eq!(pick(&mut h), 2, "all idle: the soft step finds pCPU 2");
    h.policy.idlers.set(PcpuId(2), false);
    assert_eq!(pick(&mut h), 1, "soft pCPU busy: the hard step finds idle pCPU 1");
    h.policy.idlers = idler_mask(&[true, false, false, true]);
    assert_eq!(pick(&mut h), 1, "no idler inside hard: the next allowed pCPU after the processor, not idle 0 or 3");
    // Without a useful soft mask (soft covers hard), only the hard step runs.
    h.set_affinity(0, &[1, 2], &[1, 2, 3]);
    h.policy.idlers = CpuMask::full(4);
    assert_eq!(pick(&mut h), 1);
    // Its own processor is kept when allowed and idle.
    h.policy.vcpus[0].processor = PcpuId(2);
    assert_eq!(pick(&mut h), 2);
}

#[test]
fn tickle_wakes_only_suitable_idlers_soft_first() {
    // vCPU 0 runs on pCPU 0; vCPU 1 (hard {0, 2, 3}, soft {3}) is queued on pCPU 0 behind it.
    let mut h = affine_host(4, &[(&[], &[]), (&[0, 2, 3], &[3])], 0);
    h.policy.pcpus[0].curr = Some(VcpuId(0));
    h.policy.idlers = idler_mask(&[false, true, true, true]);
    let tickle = |h: &mut FakeHost| h.call(|pol, ctx| pol.runq_tickle(ctx, VcpuId(1)));
    // The rotor would pick pCPU 1 (the first idler after 3); the soft step picks 3.
    tickle(&mut h);
    assert_eq!(h.policy.idlers, idler_mask(&[false, true, true, false]), "soft step: pCPU 3");
    // Soft pCPU taken: the hard step wakes 2, never 1 (outside hard).
    tickle(&mut h);
    assert_eq!(h.policy.idlers, idler_mask(&[false, true, false, false]), "hard step: pCPU 2");
    // Only pCPU 1 idle, which it may not use: nobody is woken for an equal priority...
    tickle(&mut h);
    assert_eq!(h.policy.idlers, idler_mask(&[false, true, false, false]));
    let drain = |h: &mut FakeHost| std::iter::from_fn(|| h.events.pop()).map(|(_, e)| e).collect::<Vec<Ev>>();
    assert!(drain(&mut h).iter().all(|e| !matches!(e, Ev::Resched(1))));
    // ...and a higher priority preempts cur on pCPU 0 rather than waking pCPU 1.
    h.policy.set_pri(VcpuId(1), PRI_BOOST);
    tickle(&mut h);
    assert_eq!(h.policy.idlers, idler_mask(&[false, true, false, false]));
    assert_eq!(drain(&mut h), vec![Ev::Resched(0)]);
}

#[test]
fn steal_takes_soft_affine_work_first_and_only_what_may_run_on_the_thief() {
    // pCPU 0 runs vCPU 0 and queues vCPUs 1 (no soft affinity) and 2 (soft {1}); pCPU 1 idles.
    let mut h = affine_host(3, &[(&[], &[]), (&[], &[]), (&[], &[1])], 0);
    h.policy.pcpus[0].curr = Some(VcpuId(0));
    h.policy.idlers = idler_mask(&[false, true, true]);
    h.policy.runq_insert(VcpuId(1));
    h.policy.runq_insert(VcpuId(2));
    let steal = |h: &mut FakeHost, thief: usize| h.call(|pol, ctx| pol.load_balance(&ctx.host, thief, PRI_IDLE));
    // Without the soft step the head (vCPU 1) would go; the soft step takes vCPU 2.
    assert_eq!(steal(&mut h, 1), Some(VcpuId(2)));
    assert_eq!(h.svc(2).processor, PcpuId(1));
    // vCPU 1 pinned to pCPU 0: pCPU 2 may not steal it.
    h.set_affinity(1, &[0], &[]);
    assert_eq!(steal(&mut h, 2), None);
    assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(1)]);
    // Allowed on 0 and 2: stolen in the hard step.
    h.set_affinity(1, &[0, 2], &[]);
    assert_eq!(steal(&mut h, 2), Some(VcpuId(1)));
}

#[test]
fn a_vcpu_whose_affinity_excludes_its_pcpu_is_moved() {
    // Two busy vCPUs on 3 pCPUs with full masks; then each one's hard affinity is changed to
    // exclude where it is: the running one leaves at its pCPU's next do_schedule, the halted
    // one wakes elsewhere without a BOOST.
    let mut h = FakeHost::new(Topology::flat(3), &[(2, 256)], cfg()).with_affinity(&[(&[], &[]), (&[], &[])]);
    h.start();
    h.run_until(50 * MS);
    let p0 = h.vcpus[0].pcpu.unwrap().idx() as u32;
    let others: Vec<u32> = (0..3).filter(|&p| p != p0).collect();
    h.set_affinity(0, &others, &[]);
    h.push(h.now, Ev::Resched(p0 as usize));
    h.run_until(h.now);
    let now_on = h.vcpus[0].pcpu.expect("still running").idx() as u32;
    assert!(others.contains(&now_on), "vCPU 0 moved from {p0} to {now_on}");
    // vCPU 1 halts, is re-pinned away from its processor, and wakes.
    h.push(h.now, Ev::Halt(1));
    h.run_until(h.now);
    let home = h.svc(1).processor.0;
    let allowed: Vec<u32> = (0..3).filter(|&p| p != home).collect();
    h.set_affinity(1, &allowed, &[]);
    h.policy.set_pri(VcpuId(1), PRI_UNDER);
    h.push(h.now + MS, Ev::Wake(1));
    h.run_until(h.now + MS);
    assert!(allowed.contains(&h.svc(1).processor.0), "woken on {:?}", h.svc(1).processor);
    assert_ne!(h.svc(1).pri, PRI_BOOST, "a migration wake is not boosted");
    h.run_until(h.now + 100 * MS);
    assert!(h.vcpus[1].pcpu.is_some_and(|p| allowed.contains(&p.0)));
}

#[test]
fn yield_bypasses_ratelimit_and_lets_the_waiter_run() {
    let mut h = FakeHost::new(Topology::flat(1), &[(2, 256)], cfg());
    h.start();
    h.run_until(100 * MS);
    let r = h.running_on(0).unwrap();
    let other = 1 - r;
    h.policy.set_pri(VcpuId(r as u32), PRI_UNDER);
    h.policy.set_pri(VcpuId(other as u32), PRI_UNDER);
    // Yield right after being scheduled: the ratelimit would otherwise keep it.
    h.push(h.now + 10 * US, Ev::Yield(r));
    h.run_until(h.now + 10 * US);
    assert_eq!(h.running_on(0), Some(other));
    assert!(h.svc(r).yielding && h.svc(r).queued_on == Some(PcpuId(0)), "the yielder waits, flagged");
    // A lone vCPU that yields keeps running.
    let mut h = FakeHost::new(Topology::flat(1), &[(1, 256)], cfg());
    h.start();
    h.push(5 * MS, Ev::Yield(0));
    h.run_until(5 * MS);
    assert_eq!(h.running_on(0), Some(0));
    assert!(!h.svc(0).yielding);
}

#[test]
fn the_ticker_is_stopped_when_a_pcpu_idles_and_rearmed_when_it_gets_work() {
    // One vCPU on one pCPU: it halts (csched_schedule stops spc->ticker), then wakes.
    let mut h = FakeHost::new(Topology::flat(1), &[(1, 256)], cfg());
    h.start();
    let ticker = h.policy.pcpus[0].ticker.expect("a busy pCPU made its ticker");
    assert!(h.timers.entry(ticker.id()).pending.is_some());
    h.run_until(15 * MS);
    h.push(h.now, Ev::Halt(0));
    h.run_until(h.now);
    assert_eq!(h.running_on(0), None);
    assert!(h.timers.entry(ticker.id()).pending.is_none(), "an idle pCPU's tick is stopped");
    h.push(h.now + 7 * MS, Ev::Wake(0));
    h.run_until(h.now + 7 * MS);
    assert_eq!(h.running_on(0), Some(0));
    assert!(h.timers.entry(ticker.id()).pending.is_some(), "and restarted when it runs again");
    assert_eq!(h.policy.pcpus[0].ticker, Some(ticker), "the same timer, re-armed");
    h.run_until(100 * MS);
    h.check();
}

#[test]
fn tick_moves_a_running_vcpu_to_an_idle_pcpu_when_others_wait() {
    // Two vCPUs stacked on one pCPU while the other idles and missed its chance to steal
    // (load-balance ratelimit): the tick sees the idler and moves the running vCPU there.
    let mut h = FakeHost::new(Topology::flat(2), &[(2, 256)], cfg());
    h.start();
    h.run_until(25 * MS);
    let p_a = h.vcpus[0].pcpu.unwrap().idx();
    let p_b = h.vcpus[1].pcpu.unwrap().idx();
    assert_ne!(p_a, p_b);
    // vCPU 1 halts; its pCPU idles.
    h.push(h.now, Ev::Halt(1));
    h.run_until(h.now);
    assert_eq!(h.running_on(p_b), None);
    // It wakes queued on vCPU 0's pCPU; the tickled idler balanced under 1 ms ago, so it
    // cannot steal yet and goes back to idle.
    h.policy.vcpus[1].processor = PcpuId(p_a as u32);
    h.policy.pcpus[p_b].last_load_balance = Some(h.now);
    h.push(h.now + 100 * US, Ev::Wake(1));
    h.run_until(h.now + 100 * US);
    assert_eq!(h.running_on(p_b), None);
    assert_eq!(h.policy.pcpus[p_a].runq, vec![VcpuId(1)]);
    // The 30 ms tick on the busy pCPU finds the idler and moves its running vCPU.
    h.run_until(31 * MS);
    assert!(h.running_on(0).is_some() && h.running_on(1).is_some(), "{:?} {:?}", h.running_on(0), h.running_on(1));
}

#[test]
fn check_catches_a_vcpu_queued_while_running() {
    let mut h = FakeHost::new(Topology::flat(1), &[(2, 256)], cfg());
    h.start();
    let r = h.running_on(0).unwrap();
    h.policy.pcpus[0].runq.push(VcpuId(r as u32));
    let host = HostView::new(h.now, &h.vcpus, &h.pcpus, &h.vms, &h.topo);
    assert!(h.policy.check(&host).is_err());
}

#[test]
fn invariants_hold_under_halts_wakes_and_yields() {
    // Every event is followed by `check` inside the fake host; this drives many paths at once.
    let mut h = FakeHost::new(Topology::new(4, 2, 2, 1).unwrap(), &[(3, 256), (4, 512), (2, 128)], cfg());
    h.start();
    for k in 0..400u64 {
        let v = ((k * 5) % 9) as usize;
        let t = k * 1_700 * US;
        match k % 3 {
            0 => h.push(t, Ev::Halt(v)),
            1 => h.push(t, Ev::Yield(v)),
            _ => {}
        }
        h.push(t + 900 * US, Ev::Wake(v));
    }
    h.run_until(SEC);
    let total: Nanos = h.run_times().iter().sum();
    assert!(total > 3 * SEC, "the host mostly ran vCPUs: {total}");
}

#[test]
fn runs_are_deterministic() {
    let run = || {
        let mut h = FakeHost::new(Topology::flat(3), &[(2, 256), (3, 384), (2, 128)], cfg());
        h.start();
        for k in 0..20u64 {
            h.push(k * 37 * MS, Ev::Halt((k % 7) as usize));
            h.push(k * 37 * MS + 3 * MS, Ev::Wake((k % 7) as usize));
        }
        h.run_until(2 * SEC);
        h.run_times()
    };
    assert_eq!(run(), run());
}

#[test]
fn a_lent_vcpu_keeps_its_books_and_pays_its_micro_run_time_on_return() {
    // Seed 002: pCPU 0 runs vCPU 0 and queues vCPU 1 (both UNDER, active); vCPU 1 is lent to a
    // micro core and comes back after 250 us there.
    let mut h = hand_set(Xen::V4_7, 1, 2, &[], &[Some(0)], &[&[1]]);
    h.policy.acct_start(VcpuId(1));
    h.policy.vcpus[1].credit = 100;
    h.call(|pol, ctx| pol.lend_vcpu(ctx, VcpuId(1)));
    assert_eq!(h.svc(1).queued_on, None, "off the run queue while away");
    assert!(h.svc(1).active, "still on its domain's active list: it keeps earning credit");
    // The engine runs it elsewhere meanwhile; it is Runnable again when it returns.
    h.vcpus[1].state = VcpuState::Runnable;
    h.call(|pol, ctx| pol.return_vcpu(ctx, VcpuId(1), 250 * US));
    assert_eq!(h.svc(1).credit, 100 - 2, "250 us at 10 credits per ms: 2 credits, 0.5 kept as residual");
    assert_eq!(h.svc(1).residual, MS / 2);
    assert_eq!(h.svc(1).pri, PRI_BOOST, "UNDER and not migrating: BOOSTed by the wake on its old pCPU (released code)");
    assert_eq!(h.svc(1).queued_on, Some(PcpuId(0)));
    // A vCPU that halted on the micro core returns halted: charged, not queued.
    h.call(|pol, ctx| pol.lend_vcpu(ctx, VcpuId(1)));
    h.vcpus[1].state = VcpuState::Halted;
    h.call(|pol, ctx| pol.return_vcpu(ctx, VcpuId(1), 150 * US));
    assert_eq!((h.svc(1).credit, h.svc(1).residual), (100 - 4, 0));
    assert_eq!(h.svc(1).queued_on, None);
    assert!(!h.svc(1).awake);
}

#[test]
fn keep_running_takes_back_a_pick_and_the_next_schedule_makes_it_again() {
    // The overlay seam: pCPU 0 runs vCPU 0 (OVER) and queues vCPU 1 (UNDER). Past the
    // ratelimit, do_schedule preempts vCPU 0 for vCPU 1; keep_running undoes that pick.
    let mut h = hand_set(Xen::V4_4, 1, 2, &[0], &[Some(0)], &[&[1]]);
    h.now = 10 * MS;
    assert!(!h.call(|pol, ctx| pol.keep_running(ctx, PcpuId(0), VcpuId(0), VcpuId(1))), "no pick to take back yet");
    let d = h.call(|pol, ctx| pol.do_schedule(ctx, PcpuId(0)));
    assert_eq!(d.next, Some(VcpuId(1)));
    assert!(h.call(|pol, ctx| pol.keep_running(ctx, PcpuId(0), VcpuId(0), VcpuId(1))));
    assert_eq!(h.policy.pcpus[0].curr, Some(VcpuId(0)), "vCPU 0 is current again");
    assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(1)], "vCPU 1 waits again, vCPU 0 is not queued");
    assert_eq!(h.svc(0).start_time, 10 * MS as i64, "vCPU 0's run is counted from now (burnt up to now)");
    h.check();
    h.now = 10 * MS + 23 * US;
    let d = h.call(|pol, ctx| pol.do_schedule(ctx, PcpuId(0)));
    assert_eq!(d.next, Some(VcpuId(1)), "asked again when the hold ends, credit makes the same pick");
}

/// `_csched_cpu_pick` as it was written before it used masks (one `Vec<bool>` per set, a scan
/// per `cpumask_cycle` and per group weight): the reference the mask version must agree with.
/// Returns the pick and the pCPU whose idle bias a commit would set.
fn cpu_pick_by_scans(pol: &Credit, host: &HostView, v: VcpuId) -> (usize, Option<usize>) {
    let topo = host.topology;
    let n = pol.pcpus.len();
    let master = pol.vcpus[v.idx()].processor.idx();
    let (mut cpu, mut spc) = (master, None);
    let siblings =
        |p: usize| -> Vec<bool> { (0..n).map(|q| topo.place(PcpuId(q as u32)).module == topo.place(PcpuId(p as u32)).module).collect() };
    let socket_mates =
        |p: usize| -> Vec<bool> { (0..n).map(|q| topo.place(PcpuId(q as u32)).socket == topo.place(PcpuId(p as u32)).socket).collect() };
    let and = |a: &[bool], b: &[bool]| -> Vec<bool> { a.iter().zip(b).map(|(x, y)| *x && *y).collect() };
    let soft = pol.soft(host, v);
    for step in BALANCE_STEPS {
        if step == Step::Soft && !soft {
            continue;
        }
        let mut cpus: Vec<bool> = (0..n).map(|p| pol.in_balance_mask(host, v, p, step)).collect();
        cpu = if cpus[master] { master } else { cycle(master, &cpus).unwrap_or(master) };
        let mut idlers: Vec<bool> = (0..n).map(|p| pol.idlers.contains(PcpuId(p as u32))).collect();
        if master == cpu && pol.pcpus[master].runq.is_empty() {
            idlers[master] = true;
        }
        for (c, i) in cpus.iter_mut().zip(&idlers) {
            *c &= *i;
        }
        if !cpus[cpu] {
            if let Some(c) = cycle(cpu, &cpus) {
                cpu = c;
            }
        }
        cpus[cpu] = false;
        while let Some(nxt) = cycle(cpu, &cpus) {
            let same_socket = topo.place(PcpuId(cpu as u32)).socket == topo.place(PcpuId(nxt as u32)).socket;
            let (factor, cpu_group, nxt_group) =
                if same_socket { (1, siblings(cpu), siblings(nxt)) } else { (2, socket_mates(cpu), socket_mates(nxt)) };
            let cpu_idlers = and(&idlers, &cpu_group);
            let nxt_idlers = and(&idlers, &nxt_group);
            let weight = |m: &[bool]| m.iter().filter(|&&b| b).count();
            if weight(&cpu_idlers) * factor < weight(&nxt_idlers) {
                let candidates = and(&nxt_idlers, &cpus);
                spc = Some(nxt);
                cpu = cycle(pol.pcpus[nxt].idle_bias, &candidates).unwrap_or(nxt);
                for (c, s) in cpus.iter_mut().zip(siblings(cpu)) {
                    *c &= !s;
                }
            } else {
                for (c, s) in cpus.iter_mut().zip(&nxt_idlers) {
                    *c &= !*s;
                }
            }
        }
        if idlers[cpu] {
            break;
        }
    }
    (cpu, spc)
}

#[test]
fn cpu_pick_with_masks_picks_as_the_scans_did_on_random_states() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    // (pCPUs, sockets, nodes, threads per core): flat, SMT, multi-socket, across a word boundary.
    for (n, sockets, nodes, threads) in [(4u32, 1u32, 1u32, 1u32), (8, 2, 1, 2), (12, 3, 3, 2), (70, 2, 2, 1), (96, 4, 2, 2)] {
        let topo = Topology::new(n, sockets, nodes, threads).unwrap();
        let nv = 6usize;
        for xen in [Xen::V4_18, Xen::V4_7, Xen::V4_4] {
            let masks: Vec<(Vec<u32>, Vec<u32>)> = (0..nv)
                .map(|_| {
                    let pick = |r: &mut dyn FnMut(u64) -> u64, density: u64| -> Vec<u32> { (0..n).filter(|_| r(4) < density).collect() };
                    // Empty means every pCPU (full masks are common).
                    let hard = if rnd(2) == 0 { vec![] } else { pick(&mut rnd, 2) };
                    let soft = if rnd(2) == 0 { vec![] } else { pick(&mut rnd, 1) };
                    (hard, soft)
                })
                .collect();
            let refs: Vec<(&[u32], &[u32])> = masks.iter().map(|(h, s)| (h.as_slice(), s.as_slice())).collect();
            let mut h = FakeHost::new(topo.clone(), &[(nv as u32, 256)], cfg_for(xen)).with_affinity(&refs);
            h.call(|pol, ctx| pol.fit_to(&ctx.host));
            for _ in 0..nv {
                let mut svc = CreditVcpu::new(VmId(0), PcpuId(0));
                svc.awake = true;
                h.policy.vcpus.push(svc);
            }
            for _ in 0..400 {
                // Density 0 (a quarter of the states): no pCPU idle, the busy host `cpu_pick`
                // answers without the walk (the scans have no such shortcut).
                let density = rnd(4);
                let idle: Vec<bool> = (0..n).map(|_| rnd(4) < density).collect();
                h.policy.idlers = idler_mask(&idle);
                for p in 0..n as usize {
                    h.policy.pcpus[p].idle_bias = rnd(n as u64) as usize;
                    h.policy.pcpus[p].runq.clear();
                }
                let v = rnd(nv as u64) as usize;
                let master = rnd(n as u64) as usize;
                h.policy.vcpus[v].processor = PcpuId(master as u32);
                if rnd(2) == 0 {
                    h.policy.pcpus[master].runq.push(VcpuId(((v + 1) % nv) as u32));
                }
                let (want, spc) = h.call(|pol, ctx| cpu_pick_by_scans(pol, &ctx.host, VcpuId(v as u32)));
                let biases: Vec<usize> = h.policy.pcpus.iter().map(|p| p.idle_bias).collect();
                let got = h.call(|pol, ctx| pol.cpu_pick(&ctx.host, VcpuId(v as u32), true));
                assert_eq!(got, want, "{n} pCPUs, {xen}: vCPU {v} on {master}");
                for (p, pc) in h.policy.pcpus.iter().enumerate() {
                    let bias = if spc == Some(p) { want } else { biases[p] };
                    assert_eq!(pc.idle_bias, bias, "{n} pCPUs, {xen}: idle bias of pCPU {p}");
                }
            }
        }
    }
}

//! Debug aid: run a scenario and dump vCPU / thread states at the end.
use vcpusim::sim::state::Sim;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).unwrap();
    let sc = vcpusim::api::load_scenario(&text, &args[1]).unwrap();
    let mut sim = Sim::build(&sc, sc.run.seed, false, false).unwrap();
    sim.start();
    let r = sim.run_until(sc.run.duration, None);
    println!("result {:?} now {}", r.is_ok(), sim.now());
    for (i, vi) in sim.vinfo().iter().enumerate() {
        let vc = &sim.vcpus()[i];
        let (g, k) = sim.gslot(vcpusim::ids::VcpuId(i as u32));
        let gv = &sim.guests()[g].vcpus[k];
        println!(
            "vcpu {i} vm {} {:?} pcpu {:?} preempted {} act {:?} kind {:?} cur {:?} rq {:?} pending {:?}",
            vi.vm,
            vi.state,
            vi.pcpu,
            vi.preempted,
            vc.activity,
            vc.time_kind,
            gv.current,
            gv.runqueue,
            gv.pending_ipis.len()
        );
    }
    for t in sim.guests().threads() {
        println!("thread {} vm {} {:?} vcpu {} front {:?}", t.id, t.vm, t.state, t.vcpu, t.steps.front());
    }
    for (i, s) in sim.guests().iter().flat_map(|g| g.shootdowns.iter()).enumerate() {
        println!("sd {i} pending {}", s.pending_acks);
    }
}

//! The guest kernel presets of the seeds' older kernels, run: Linux 3.13 on Xen (seed 001's
//! guest) takes Xen's PV ticket-lock slow path (waiters block in SCHEDOP_poll and are kicked),
//! where Linux 3.2 spins; on bare metal (seed 001's PM) 3.13's locks spin natively; Linux 2.6.18
//! (seed 004's guest) takes its kernel locks unfairly, as 3.2's `spinlock = "tas"` did.

mod common;
use common::run_sim_checked;

/// A 4-vCPU VM of four threads contending for one kernel lock (30 us critical sections in
/// syscalls) beside a 2-vCPU hog on 4 pCPUs under Xen 4.4's credit: lock holders and waiters
/// are preempted. `extra` goes into the VM's table.
fn contended(kernel: &str, extra: &str) -> String {
    format!(
        "[host]\npcpus = 4\npolicy = \"credit\"\nparams = {{ xen = \"4.4\" }}\n\
         [[vm]]\nname = \"p\"\nvcpus = 4\nworkload = \"program\"\n{extra}\n[vm.guest]\nkernel = \"{kernel}\"\n\
         [vm.program]\nkernel_locks = [\"l\"]\n\
         threads = [[{{loop = \"forever\", body = [{{syscall = \"30us\", lock = 0}}, {{compute = \"20us\"}}, {{progress = true}}]}}]]\n\
         [[vm]]\nname = \"hog\"\nvcpus = 2\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"300ms\"\n"
    )
}

#[test]
fn linux_3_13_on_xen_blocks_lock_waiters_in_scheduler_polls_where_3_2_spins() {
    let old = run_sim_checked(&contended("linux-3.2", ""), 300);
    let new = run_sim_checked(&contended("linux-3.13", ""), 300);
    let (o, n) = (&old.vms()[0].stats, &new.vms()[0].stats);
    assert_eq!((o.poll_blocks, o.kicks), (0, 0), "3.2's ticket locks never leave the spin");
    assert!(n.poll_blocks > 0 && n.kicks > 0, "3.13's waiters never blocked: {} polls, {} kicks", n.poll_blocks, n.kicks);
    assert!(o.spin_ns > n.spin_ns, "blocking waiters spin less: 3.2 {} ns, 3.13 {} ns", o.spin_ns, n.spin_ns);
}

#[test]
fn linux_2_6_18_takes_its_kernel_locks_unfairly_as_3_2_with_tas_did() {
    let preset = run_sim_checked(&contended("linux-2.6.18", ""), 300);
    let tas =
        run_sim_checked(&contended("linux-3.2", "").replace("kernel = \"linux-3.2\"", "kernel = \"linux-3.2\"\nspinlock = \"tas\""), 300);
    let (a, b) = (&preset.vms()[0].stats, &tas.vms()[0].stats);
    assert_eq!((a.cpu_ns(), a.spin_ns, a.lwp), (b.cpu_ns(), b.spin_ns, b.lwp), "2.6.18 is 3.2 with unfair locks");
    assert_eq!(preset.guests()[0].stats.progress, tas.guests()[0].stats.progress);
    let ticket = run_sim_checked(&contended("linux-3.2", ""), 300);
    assert_ne!(ticket.guests()[0].stats.progress, preset.guests()[0].stats.progress, "the ticket run differs: the test can tell");
}

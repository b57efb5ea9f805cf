//! The urgent-vCPU-first overlay (seed 000 section 3.1.3) through the whole engine, over both
//! policies that carry it: a dedup VM (TLB-shootdown heavy, seed 000 Figure 1) beside an
//! always-busy VM on 4 pCPUs, in check mode so every policy invariant holds after every event.

mod common;
use common::*;

fn scenario(policy: &str, knobs: &str) -> String {
    format!(
        "[host]\npcpus = 4\npolicy = \"{policy}\"\n[host.uvf]\n\
         [[vm]]\nname = \"dedup\"\nvcpus = 4\nworkload = \"parsec.dedup\"\nthreads = 4\n{knobs}\n\
         [[vm]]\nname = \"hog\"\nvcpus = 4\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"500ms\"\nseed = 5\n"
    )
}

#[test]
fn tlb_co_cuts_shootdown_waits_under_cfs_and_credit() {
    for policy in ["cfs", "credit"] {
        let off = vm_table(&run_toml(&scenario(policy, ""), true));
        let on = vm_table(&run_toml(&scenario(policy, "[vm.uvf]\ntlb_co = true"), true));
        assert_eq!(num(&off, "dedup", "urgent_count"), 0.0, "{policy}: no knobs, no urgency");
        assert!(num(&on, "dedup", "urgent_count") > 50.0, "{policy}: recipients became urgent");
        let (wait_off, wait_on) = (num(&off, "dedup", "tlb_wait_ms"), num(&on, "dedup", "tlb_wait_ms"));
        // The recipient runs on a borrowed 500 us tslice and is picked afresh after it, so a
        // later shootdown may find it descheduled again: the waits halve rather than vanish.
        assert!(
            wait_on * 1.5 < wait_off,
            "{policy}: TLB-Co runs preempted recipients at once, so shootdowns wait far less ({wait_on} vs {wait_off} ms)"
        );
        assert_eq!(num(&on, "hog", "urgent_count"), 0.0, "{policy}: the hog's VM has no knobs");
    }
}

#[test]
fn resched_dp_makes_reschedule_ipi_senders_urgent_under_cfs_and_credit() {
    for policy in ["cfs", "credit"] {
        let on = vm_table(&run_toml(&scenario(policy, "[vm.uvf]\nresched_dp = \"500us\""), true));
        let sent = num(&on, "dedup", "ipi_resched_count");
        let urgent = num(&on, "dedup", "urgent_count");
        assert!(sent > 20.0, "{policy}: dedup sends reschedule IPIs ({sent})");
        // Every send starts or extends a delay; it counts only when the sender was not urgent.
        assert!(urgent > 0.0 && urgent <= sent, "{policy}: {urgent} urgent entries for {sent} sends");
    }
}

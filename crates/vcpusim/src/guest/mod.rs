//! The guest kernel: threads, scheduler, spinlocks, futexes, IPIs and TLB shootdowns. One
//! `GuestKernel` per VM (`kernel.rs`) holds its state, including each vCPU's guest state
//! (`GuestVcpu`) and its counters (`stats.rs`); each other file adds one mechanism as
//! `GuestKernel` methods, so the whole of, say, the futex model reads in futex.rs. Thread records
//! and spinlocks stay in host-wide tables lent as a `GuestEnv`. The guest meets the host only at
//! the VM-exit line (`vmexit.rs`): the host enters a vCPU and `run.rs` answers what it does next
//! (`vmexit::Next`: work, a spin, an exit, a request); upcalls (an interrupt, the tick) and the
//! end of work the host ran come back as `GuestKernel` methods. Nothing here imports `sim` or
//! the hypervisor.

pub mod bare_metal_balance;
pub mod bare_metal_placement;
pub mod config;
pub mod futex;
pub mod haltpoll;
pub mod handoff;
pub mod interpreter;
pub mod irs;
pub mod kernel;
pub mod kernel_fn;
pub mod mm_sem;
pub mod netrx;
pub mod objects;
pub mod pv_guest;
pub mod pv_spinlock;
pub mod run;
pub mod scheduler;
pub mod spinlock;
pub mod stats;
pub mod sync;
pub mod thread;
pub mod tlb;
pub mod worksteal;

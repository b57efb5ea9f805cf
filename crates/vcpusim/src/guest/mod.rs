//! The guest kernel: threads, scheduler, spinlocks, futexes, IPIs and TLB shootdowns. One
//! `GuestKernel` per VM (`kernel.rs`) holds its state, including each vCPU's guest state
//! (`GuestVcpu`); each other file adds one mechanism as `GuestKernel` methods, so the whole of,
//! say, the futex model reads in futex.rs. Thread records and spinlocks stay in host-wide tables
//! lent as a `GuestEnv`; thin `impl Sim` wrappers add what crosses into the host, and the guest
//! reaches the host only through `vmexit::Exit` (`Sim::on_exit`). Step execution is still in
//! `sim/execute.rs` (docs/architecture.md, "What is left of the split").

pub mod config;
pub mod futex;
pub mod interpreter;
pub mod kernel;
pub mod kernel_fn;
pub mod mm_sem;
pub mod objects;
pub mod scheduler;
pub mod spinlock;
pub mod sync;
pub mod thread;
pub mod tlb;

//! The guest kernel: threads, scheduler, spinlocks, futexes, IPIs and TLB shootdowns. One
//! `GuestKernel` per VM (`kernel.rs`) holds its state; each other file adds one mechanism, so
//! the whole of, say, the futex model reads in futex.rs. The guest reaches the host only through
//! `vmexit::Exit` (`Sim::on_exit`); the mechanisms are still `impl Sim` blocks over host-wide
//! thread, lock and vCPU tables (docs/architecture.md, "What is left of the split").

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

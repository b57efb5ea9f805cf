//! The guest kernel: threads, scheduler, spinlocks, futexes, IPIs and TLB shootdowns.
//! Each file adds one mechanism to the simulation (`impl Sim`), so the whole of, say, the futex
//! model reads in futex.rs.

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

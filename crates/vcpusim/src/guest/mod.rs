//! The guest kernel: threads, scheduler, spinlocks, futexes, IPIs and TLB shootdowns.

pub mod config;

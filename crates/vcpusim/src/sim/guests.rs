//! The guests, an owned part of the engine core: each VM's kernel (`guest/kernel.rs`), and the
//! threads and spinlocks of all of them, in host-wide tables indexed by `ThreadId` and `LockId`
//! (a thread and a lock belong to one VM; the tables are shared so the hot path indexes one
//! vector).
//!
//! ```text
//!   Guests ── kernels[vm]   GuestKernel: vCPUs' run queues, sync objects, stats
//!          ├─ threads[t]    Thread: state, vCPU, code and pc, held locks
//!          └─ locks[l]      Spinlock: holder, waiters, class
//! ```
//!
//! Anyone may read them (the report, the tests); only the engine core changes them, and it does
//! through a kernel's operations, lent the tables they need (`Guests::env`,
//! `Guests::kernel_and_threads`; tests drive one by hand through `Sim::drive_guest`). The build adds kernels, threads and locks and nothing else
//! does: the tables never shrink, so an id stays valid for the run.

use crate::guest::kernel::{GuestEnv, GuestKernel};
use crate::guest::spinlock::Spinlock;
use crate::guest::thread::Thread;
use crate::hardware::costs::Costs;
use crate::ids::{LockId, ThreadId};
use crate::time::Nanos;
use crate::vmexit::PvArea;

/// Every VM's guest kernel with the threads and locks they own.
#[derive(Default)]
pub struct Guests {
    kernels: Vec<GuestKernel>,
    threads: Vec<Thread>,
    locks: Vec<Spinlock>,
}

impl std::ops::Index<usize> for Guests {
    type Output = GuestKernel;
    /// VM `vm`'s kernel.
    #[inline(always)]
    fn index(&self, vm: usize) -> &GuestKernel {
        &self.kernels[vm]
    }
}

impl<'a> IntoIterator for &'a Guests {
    type Item = &'a GuestKernel;
    type IntoIter = std::slice::Iter<'a, GuestKernel>;
    fn into_iter(self) -> Self::IntoIter {
        self.kernels.iter()
    }
}

impl Guests {
    /// The kernels, by VM.
    pub fn iter(&self) -> std::slice::Iter<'_, GuestKernel> {
        self.kernels.iter()
    }

    /// How many VMs (kernels) there are.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    /// The kernels, by VM, as a slice (what a policy's channel reads, `GuestSymbols`).
    #[inline(always)]
    pub fn kernels(&self) -> &[GuestKernel] {
        &self.kernels
    }

    /// Every guest thread, by `ThreadId`.
    #[inline(always)]
    pub fn threads(&self) -> &[Thread] {
        &self.threads
    }

    /// Every guest spinlock, by `LockId`.
    #[inline(always)]
    pub fn locks(&self) -> &[Spinlock] {
        &self.locks
    }

    /// VM `vm`'s kernel, to change it (an operation that needs no table).
    #[inline(always)]
    pub(in crate::sim) fn kernel_mut(&mut self, vm: usize) -> &mut GuestKernel {
        &mut self.kernels[vm]
    }

    /// The kernels, to change them (the build's mechanisms set theirs up).
    pub(in crate::sim) fn kernels_mut(&mut self) -> std::slice::IterMut<'_, GuestKernel> {
        self.kernels.iter_mut()
    }

    /// VM `vm`'s kernel and the thread table, for an operation on the threads.
    #[inline(always)]
    pub(in crate::sim) fn kernel_and_threads(&mut self, vm: usize) -> (&mut GuestKernel, &mut [Thread]) {
        (&mut self.kernels[vm], &mut self.threads)
    }

    /// VM `vm`'s kernel and everything its operations need from the host (`GuestEnv`).
    #[inline(always)]
    pub(in crate::sim) fn env<'a>(
        &'a mut self,
        vm: usize,
        costs: &'a Costs,
        pv: &'a mut [PvArea],
        now: Nanos,
    ) -> (&'a mut GuestKernel, GuestEnv<'a>) {
        (&mut self.kernels[vm], GuestEnv { threads: &mut self.threads, locks: &mut self.locks, costs, pv, now })
    }

    /// The build: the next kernel (VM `len()`).
    pub(in crate::sim) fn add_kernel(&mut self, kernel: GuestKernel) {
        debug_assert_eq!(kernel.vm.idx(), self.kernels.len());
        self.kernels.push(kernel);
    }

    /// The build: the id the next thread gets.
    pub(in crate::sim) fn next_thread(&self) -> ThreadId {
        ThreadId(self.threads.len() as u32)
    }

    /// The build: a thread, with the id [`Guests::next_thread`] gave.
    pub(in crate::sim) fn add_thread(&mut self, thread: Thread) {
        debug_assert_eq!(thread.id, self.next_thread());
        self.threads.push(thread);
    }

    /// The build: a kernel lock; its id.
    pub(in crate::sim) fn add_lock(&mut self, lock: Spinlock) -> LockId {
        let l = LockId(self.locks.len() as u32);
        self.locks.push(lock);
        l
    }
}

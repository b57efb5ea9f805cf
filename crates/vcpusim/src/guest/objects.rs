//! A VM's user-level synchronization objects and the kernel objects behind them.

use super::thread::FutexKey;
use crate::ids::{LockId, ThreadId};
use std::collections::{BTreeMap, VecDeque};

/// glibc lowlevellock states (nptl/lowlevellock.h): 0 free, 1 locked, 2 locked with waiters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutexWord {
    Free = 0,
    Locked = 1,
    Contended = 2,
}

#[derive(Clone, Debug)]
pub struct Barrier {
    pub parties: usize,
    pub arrived: usize,
    /// Bumped each time the barrier opens; the futex word waiters sleep on.
    pub generation: u64,
    /// Threads spinning in user space on this barrier.
    pub spinners: Vec<ThreadId>,
}

/// PARSEC's own barrier (`struct parsec_barrier_t`, parsec_barrier.hpp, PARSEC 2.1): a
/// two-phase centralized barrier guarded by a pthread mutex, with a condition variable to sleep
/// on. Each program barrier has one; its mutex and condition variable are appended after the
/// program's own and the queues' (sim/build.rs).
#[derive(Clone, Debug)]
pub struct ParsecBarrier {
    /// `max`: the parties.
    pub max: usize,
    /// `n`: threads between arrival and departure.
    pub n: usize,
    /// `is_arrival_phase`: threads may arrive (true) or are leaving (false).
    pub arrival: bool,
    /// `barrier->mutex`, an index into `SyncObjects::mutexes`.
    pub mutex: usize,
    /// `barrier->cond`, an index into `SyncObjects::conds`.
    pub cond: usize,
    /// Threads spinning in user space on `is_arrival_phase` (ENABLE_SPIN_BARRIER).
    pub spinners: Vec<ThreadId>,
}

/// A bounded queue built like a textbook pthread queue: a mutex and two condition variables.
#[derive(Clone, Debug)]
pub struct Queue {
    pub capacity: usize,
    pub items: usize,
    pub mutex: usize,
    pub not_empty: usize,
    pub not_full: usize,
}

/// An in-flight TLB shootdown.
#[derive(Clone, Debug)]
pub struct Shootdown {
    pub initiator: ThreadId,
    pub pending_acks: u32,
    pub pages: u32,
    pub started: u64,
}

/// Everything synchronization-related in one VM.
#[derive(Clone, Debug, Default)]
pub struct SyncObjects {
    pub mutexes: Vec<MutexWord>,
    pub barriers: Vec<Barrier>,
    /// Condition-variable sequence numbers (the futex word of old-style glibc condvars).
    pub conds: Vec<u64>,
    /// The mutex each condition variable was last waited with (glibc's `cond->__data.__mutex`,
    /// set by pthread_cond_wait): where pthread_cond_broadcast requeues the sleepers.
    pub cond_mutex: BTreeMap<usize, usize>,
    /// PARSEC barriers, one per program barrier (used by `Op::ParsecBarrier`).
    pub parsec: Vec<ParsecBarrier>,
    /// Threads spinning in user space on `pthread_mutex_trylock` of a mutex, by mutex.
    pub mutex_spinners: BTreeMap<usize, Vec<ThreadId>>,
    pub queues: Vec<Queue>,
    /// futex wait queues, by futex.
    pub futex_waiters: BTreeMap<FutexKey, VecDeque<ThreadId>>,
    /// The hash-bucket spinlock of each futex.
    pub bucket_lock: BTreeMap<FutexKey, LockId>,
    /// Kernel locks named by Syscall ops.
    pub kernel_locks: Vec<LockId>,
    /// The address space's mmap_sem, taken by mmap and munmap (guest/mm_sem.rs).
    pub mm_sem: MmSem,
}

/// The write side of an mm's `mmap_sem` (Linux 3.2 rw_semaphore, lib/rwsem.c): a sleeping lock
/// whose wait list is protected by the spinlock `wait_lock` (lock class "mm-sem-wait").
#[derive(Clone, Debug, Default)]
pub struct MmSem {
    /// The writer holding the semaphore.
    pub owner: Option<ThreadId>,
    /// Writers queued on the wait list, in arrival order.
    pub waiters: VecDeque<ThreadId>,
    /// `sem->wait_lock`, created on the first contended down_write.
    pub wait_lock: Option<LockId>,
}

impl SyncObjects {
    /// The current value of a futex word, as futex_wait compares it.
    pub fn futex_value(&self, key: FutexKey) -> u64 {
        match key {
            FutexKey::Mutex(m) => self.mutexes[m] as u64,
            FutexKey::Barrier(b) => self.barriers[b].generation,
            FutexKey::Cond(c) => self.conds[c],
            // Not a futex word: nobody futex_waits on the semaphore; its sleepers are queued
            // by guest/mm_sem.rs. The owner's presence stands in for the rwsem count.
            FutexKey::MmSem => u64::from(self.mm_sem.owner.is_some()),
        }
    }
}

/// Which futex hash bucket a futex falls in: a fixed, platform-independent hash so that
/// unrelated futexes may share a bucket lock as in the real futex_hash().
pub fn futex_bucket(key: FutexKey, buckets: usize) -> usize {
    let (kind, idx) = match key {
        FutexKey::Mutex(i) => (1u64, i as u64),
        FutexKey::Barrier(i) => (2, i as u64),
        FutexKey::Cond(i) => (3, i as u64),
        FutexKey::MmSem => (4, 0),
    };
    let mut h = (kind << 32 | idx).wrapping_mul(0x9e3779b97f4a7c15);
    h ^= h >> 29;
    (h % buckets.max(1) as u64) as usize
}

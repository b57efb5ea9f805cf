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
    pub queues: Vec<Queue>,
    /// futex wait queues, by futex.
    pub futex_waiters: BTreeMap<FutexKey, VecDeque<ThreadId>>,
    /// The hash-bucket spinlock of each futex.
    pub bucket_lock: BTreeMap<FutexKey, LockId>,
    /// Kernel locks named by Syscall ops.
    pub kernel_locks: Vec<LockId>,
}

impl SyncObjects {
    /// The current value of a futex word, as futex_wait compares it.
    pub fn futex_value(&self, key: FutexKey) -> u64 {
        match key {
            FutexKey::Mutex(m) => self.mutexes[m] as u64,
            FutexKey::Barrier(b) => self.barriers[b].generation,
            FutexKey::Cond(c) => self.conds[c],
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
    };
    let mut h = (kind << 32 | idx).wrapping_mul(0x9e3779b97f4a7c15);
    h ^= h >> 29;
    (h % buckets.max(1) as u64) as usize
}

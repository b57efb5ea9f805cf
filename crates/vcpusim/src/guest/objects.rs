//! A VM's user-level synchronization objects and the kernel objects behind them.

use super::thread::FutexKey;
use crate::ids::{LockId, ThreadId, VcpuId};
use std::collections::VecDeque;

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

/// A ticket dispenser (`Op::Tickets`): PARSEC bodytrack's `TicketDispenser`, a counter under
/// a pthread mutex.
#[derive(Clone, Debug)]
pub struct Dispenser {
    /// Tickets taken since the last reset.
    pub next: u64,
    /// Tickets to hand out.
    pub total: u64,
    pub mutex: usize,
}

/// PARSEC facesim's TaskQ batch-sync object (`Op::TaskqWaitForTasks`): `Sync` in
/// TaskQ/lib/taskQDistCommon.c.
#[derive(Clone, Debug)]
pub struct TaskSync {
    /// `threadCount`: threads arrived since the last signal.
    pub count: usize,
    /// `numThreads`.
    pub parties: usize,
    pub mutex: usize,
    /// `taskAvail`, `tasksDone`: condition variables.
    pub task_avail: usize,
    pub tasks_done: usize,
}

/// A TaskQ task queue (`TaskQ` in taskQDistFixed.c, `Op::TaskqPut`): its tasks, under a program
/// mutex.
#[derive(Clone, Debug)]
pub struct TaskQueue {
    /// `q.shared.count`: tasks in it.
    pub count: u64,
    pub mutex: usize,
}

/// An in-flight TLB shootdown.
#[derive(Clone, Debug)]
pub struct Shootdown {
    pub initiator: ThreadId,
    pub pending_acks: u32,
    pub pages: u32,
    pub started: u64,
    /// The vCPUs the IPIs went to, kept for the yield step that follows the sends on the Linux
    /// 4.4 guest on Xen and the 6.x guest on KVM (`Action::YieldIfStolen`,
    /// `Action::PvSchedYield`); empty otherwise. The list stays with the record when its id is
    /// used again, so a shootdown allocates nothing once the records have grown.
    pub targets: Vec<VcpuId>,
}

/// Everything synchronization-related in one VM.
#[derive(Clone, Debug, Default)]
pub struct SyncObjects {
    pub mutexes: Vec<MutexWord>,
    /// The thread holding each mutex (glibc keeps it in `__data.__owner`; an error-checking
    /// mutex compares it in pthread_mutex_unlock and returns EPERM). Only the misuse checks read it.
    pub mutex_owner: Vec<Option<ThreadId>>,
    pub barriers: Vec<Barrier>,
    /// Condition-variable sequence numbers (the futex word of old-style glibc condvars).
    pub conds: Vec<u64>,
    /// The mutex each condition variable was last waited with (glibc's `cond->__data.__mutex`,
    /// set by pthread_cond_wait): where pthread_cond_broadcast requeues the sleepers. By
    /// condition variable, grown on first use.
    pub cond_mutex: Vec<Option<usize>>,
    /// PARSEC barriers, one per program barrier (used by `Op::ParsecBarrier`).
    pub parsec: Vec<ParsecBarrier>,
    /// Threads spinning in user space on `pthread_mutex_trylock` of a mutex, by mutex (grown on
    /// first use; a list is emptied, not dropped, when the mutex is released).
    pub mutex_spinners: Vec<Vec<ThreadId>>,
    pub queues: Vec<Queue>,
    pub dispensers: Vec<Dispenser>,
    pub task_syncs: Vec<TaskSync>,
    pub task_queues: Vec<TaskQueue>,
    /// futex wait queues, by futex.
    pub futex_waiters: FutexMap<VecDeque<ThreadId>>,
    /// The hash-bucket spinlock of each futex.
    pub bucket_lock: FutexMap<LockId>,
    /// Kernel locks named by Syscall ops.
    pub kernel_locks: Vec<LockId>,
    /// The program's user-space spinlocks (`Op::SpinLock`), in the same lock table.
    pub user_spinlocks: Vec<LockId>,
    /// The CPU masks `Op::SetAffinity` sets, over the VM's vCPU indices (`None`: every vCPU).
    pub cpu_masks: Vec<Option<crate::hardware::cpumask::IndexMask>>,
    /// The address space's mmap_sem, taken by mmap and munmap (guest/mm_sem.rs).
    pub mm_sem: MmSem,
}

/// A map from futexes to `V`, as a `BTreeMap<FutexKey, V>` would be used, kept in a vector
/// indexed by object: a lookup on the futex paths is an index, not a tree walk. An
/// entry exists once created (`entry_or_default`, `insert`), empty or not, as a map's would.
#[derive(Clone, Debug)]
pub struct FutexMap<V> {
    /// By `FutexMap::slot` of the key; `None`: no entry.
    slots: Vec<Option<V>>,
    /// The keys with an entry, in the order they were created.
    keys: Vec<FutexKey>,
}

impl<V> Default for FutexMap<V> {
    fn default() -> Self {
        FutexMap { slots: Vec::new(), keys: Vec::new() }
    }
}

impl<V> FutexMap<V> {
    /// Where `key`'s entry lives: the two kernel wait queues first, then the mutexes, barriers
    /// and condition variables interleaved by index.
    #[inline]
    fn slot(key: FutexKey) -> usize {
        match key {
            FutexKey::MmSem => 0,
            FutexKey::Socket => 1,
            FutexKey::Mutex(m) => 2 + 3 * m,
            FutexKey::Barrier(b) => 3 + 3 * b,
            FutexKey::Cond(c) => 4 + 3 * c,
        }
    }

    #[inline]
    pub fn get(&self, key: &FutexKey) -> Option<&V> {
        self.slots.get(Self::slot(*key))?.as_ref()
    }

    #[inline]
    pub fn get_mut(&mut self, key: &FutexKey) -> Option<&mut V> {
        self.slots.get_mut(Self::slot(*key))?.as_mut()
    }

    pub fn contains_key(&self, key: &FutexKey) -> bool {
        self.get(key).is_some()
    }

    /// Set `key`'s entry to `value`.
    pub fn insert(&mut self, key: FutexKey, value: V) {
        let i = Self::slot(key);
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        if self.slots[i].is_none() {
            self.keys.push(key);
        }
        self.slots[i] = Some(value);
    }

    /// `key`'s entry, created empty if it has none (`BTreeMap::entry(key).or_default()`).
    #[inline]
    pub fn entry_or_default(&mut self, key: FutexKey) -> &mut V
    where
        V: Default,
    {
        let i = Self::slot(key);
        if self.slots.get(i).is_none_or(|s| s.is_none()) {
            self.insert(key, V::default());
        }
        self.slots[i].as_mut().expect("just created")
    }

    /// The keys with an entry (in the order they were created).
    pub fn keys(&self) -> impl Iterator<Item = &FutexKey> {
        self.keys.iter()
    }

    /// The entries (in the order they were created).
    pub fn iter(&self) -> impl Iterator<Item = (&FutexKey, &V)> {
        self.keys.iter().map(|k| (k, self.get(k).expect("a listed key has its entry")))
    }
}

impl<V> std::ops::Index<&FutexKey> for FutexMap<V> {
    type Output = V;

    fn index(&self, key: &FutexKey) -> &V {
        self.get(key).expect("no entry for this futex")
    }
}

/// The write side of an mm's `mmap_sem` (Linux 3.2 rw_semaphore, lib/rwsem.c; 3.10+ lock
/// stealing with `[guest] rwsem_steal`, guest/mm_sem.rs): a sleeping lock whose wait list is
/// protected by the spinlock `wait_lock` (lock class "mm-sem-wait").
#[derive(Clone, Debug, Default)]
pub struct MmSem {
    /// The writer holding the semaphore.
    pub owner: Option<ThreadId>,
    /// Writers queued on the wait list, in arrival order.
    pub waiters: VecDeque<ThreadId>,
    /// `sem->wait_lock`, created on the first contended down_write.
    pub wait_lock: Option<LockId>,
    /// Writers spinning optimistically on the owner (`[guest] rwsem_spin`), poked when it
    /// releases the semaphore or its vCPU is preempted.
    pub spinners: Vec<ThreadId>,
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
            // Not a futex word either: the socket's sleeper is woken by the receive path.
            FutexKey::Socket => 0,
        }
    }
}

/// The guest process's `mm_struct`: a synthetic kernel address. Each VM runs one process in its
/// own kernel with its own hash table, so every VM uses the same one.
const MM_STRUCT: u64 = 0xffff_8800_7a3c_1c00;
/// Where the synthetic user addresses of a process's synchronization objects start (a
/// page-aligned spot in a non-PIE x86_64 program's data segment).
const DATA_BASE: u64 = 0x0060_2000;
/// Spacing of the object arrays in the data segment (each array starts on its own page).
const ARRAY_STRIDE: u64 = 0x10_0000;
/// x86_64 glibc sizes: `pthread_mutex_t` 40 bytes (futex word `__lock` at 0), `pthread_cond_t`
/// 48 bytes (futex word `__futex` at 4), `pthread_barrier_t` 32 bytes (futex word
/// `curr_event` at 0); PARSEC's `parsec_barrier_t` is a mutex then a condition variable then
/// three ints (parsec_barrier.hpp), 104 bytes.
const MUTEX_SIZE: u64 = 40;
const COND_SIZE: u64 = 48;
const COND_FUTEX_OFFSET: u64 = 4;
const BARRIER_SIZE: u64 = 32;
const PARSEC_BARRIER_SIZE: u64 = 104;
/// TaskQ's `Sync` (taskQDistCommon.c): a mutex, two condition variables and a long, 144 bytes.
const TASK_SYNC_SIZE: u64 = 144;
/// PAGE_SIZE on x86.
const PAGE_SIZE: u64 = 4096;

impl SyncObjects {
    /// The user address of a futex word: synthetic, distinct and fixed by the object's kind and
    /// index. A PARSEC barrier's mutex and condition variable sit inside its `parsec_barrier_t`.
    pub fn futex_address(&self, key: FutexKey) -> u64 {
        let parsec = |pick: fn(&ParsecBarrier) -> usize, i: usize| self.parsec.iter().position(|p| pick(p) == i);
        let sync = |k: usize| DATA_BASE + 4 * ARRAY_STRIDE + k as u64 * TASK_SYNC_SIZE;
        match key {
            FutexKey::Mutex(i) => match parsec(|p| p.mutex, i) {
                Some(b) => DATA_BASE + 3 * ARRAY_STRIDE + b as u64 * PARSEC_BARRIER_SIZE,
                None => match self.task_syncs.iter().position(|s| s.mutex == i) {
                    Some(k) => sync(k),
                    None => DATA_BASE + i as u64 * MUTEX_SIZE,
                },
            },
            FutexKey::Cond(i) => match parsec(|p| p.cond, i) {
                Some(b) => DATA_BASE + 3 * ARRAY_STRIDE + b as u64 * PARSEC_BARRIER_SIZE + MUTEX_SIZE + COND_FUTEX_OFFSET,
                None => match self.task_syncs.iter().position(|s| s.task_avail == i || s.tasks_done == i) {
                    Some(k) => {
                        let second = u64::from(self.task_syncs[k].tasks_done == i);
                        sync(k) + MUTEX_SIZE + second * COND_SIZE + COND_FUTEX_OFFSET
                    }
                    None => DATA_BASE + ARRAY_STRIDE + i as u64 * COND_SIZE + COND_FUTEX_OFFSET,
                },
            },
            FutexKey::Barrier(i) => DATA_BASE + 2 * ARRAY_STRIDE + i as u64 * BARRIER_SIZE,
            // Not a futex (its wait list has its own spinlock); never hashed.
            FutexKey::MmSem => MM_STRUCT,
            FutexKey::Socket => MM_STRUCT,
        }
    }

    /// Which futex hash bucket a futex word falls in, as Linux 3.2 hashes a private futex
    /// (kernel/futex.c `get_futex_key`, `hash_futex`): the key is the page-aligned address, the
    /// mm and the offset in the page; `jhash2` of the first two (four u32 words on x86_64) with
    /// the offset as initval, masked to the table (`1 << FUTEX_HASHBITS` = 256 buckets). Words
    /// in different buckets never share a bucket spinlock.
    pub fn futex_bucket(&self, key: FutexKey, buckets: usize) -> usize {
        let address = self.futex_address(key);
        let offset = address % PAGE_SIZE;
        let word = address - offset;
        let k = [word as u32, (word >> 32) as u32, MM_STRUCT as u32, (MM_STRUCT >> 32) as u32];
        jhash2(&k, offset as u32) as usize % buckets.max(1)
    }
}

/// `jhash2` of include/linux/jhash.h (Linux 3.2: Bob Jenkins' lookup3 `hashword`).
pub fn jhash2(k: &[u32], initval: u32) -> u32 {
    const JHASH_INITVAL: u32 = 0xdead_beef;
    let mut a = JHASH_INITVAL.wrapping_add((k.len() as u32) << 2).wrapping_add(initval);
    let (mut b, mut c) = (a, a);
    let mut k = k;
    while k.len() > 3 {
        a = a.wrapping_add(k[0]);
        b = b.wrapping_add(k[1]);
        c = c.wrapping_add(k[2]);
        // __jhash_mix
        a = a.wrapping_sub(c);
        a ^= c.rotate_left(4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= a.rotate_left(6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= b.rotate_left(8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c);
        a ^= c.rotate_left(16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= a.rotate_left(19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= b.rotate_left(4);
        b = b.wrapping_add(a);
        k = &k[3..];
    }
    if k.is_empty() {
        return c;
    }
    if k.len() == 3 {
        c = c.wrapping_add(k[2]);
    }
    if k.len() >= 2 {
        b = b.wrapping_add(k[1]);
    }
    a = a.wrapping_add(k[0]);
    // __jhash_final
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(14));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(11));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(25));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(16));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(4));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(14));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(24));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Objects with `mutexes` mutexes, 1 condition variable, 1 barrier and its PARSEC form
    /// (mutex `mutexes`, condition variable 1).
    fn objects(mutexes: usize) -> SyncObjects {
        SyncObjects {
            mutexes: vec![MutexWord::Free; mutexes + 1],
            conds: vec![0; 2],
            barriers: vec![Barrier { parties: 2, arrived: 0, generation: 0, spinners: Vec::new() }],
            parsec: vec![ParsecBarrier { max: 2, n: 0, arrival: true, mutex: mutexes, cond: 1, spinners: Vec::new() }],
            ..SyncObjects::default()
        }
    }

    #[test]
    fn jhash2_is_the_kernels() {
        // Values from include/linux/jhash.h's jhash2 compiled with gcc (x86_64): the futex key
        // of address 0x602000 in mm 0xffff88007a3c1c00, and a 5-word key through the mix loop.
        let mm = MM_STRUCT;
        assert_eq!(jhash2(&[0x602000, 0, mm as u32, (mm >> 32) as u32], 0), 2_755_990_844);
        assert_eq!(jhash2(&[1, 2, 3, 4, 5], 7), 1_515_141_918);
        assert_eq!(jhash2(&[], 0), 0xdead_beef);
    }

    #[test]
    fn futex_words_hash_by_address_as_linux_3_2_does() {
        let o = objects(2);
        // Buckets of 256 computed by the kernel's hash_futex for the same keys (see above).
        assert_eq!(o.futex_address(FutexKey::Mutex(1)), 0x602028);
        assert_eq!(o.futex_bucket(FutexKey::Mutex(0), 256), 60);
        assert_eq!(o.futex_bucket(FutexKey::Mutex(1), 256), 63);
        assert_eq!(o.futex_bucket(FutexKey::Cond(0), 256), 89);
        assert_eq!(o.futex_bucket(FutexKey::Barrier(0), 256), 21);
        // The PARSEC barrier's mutex and condition variable, inside one parsec_barrier_t.
        assert_eq!(o.futex_address(FutexKey::Mutex(2)), 0x902000);
        assert_eq!(o.futex_address(FutexKey::Cond(1)), 0x90202c);
        assert_eq!(o.futex_bucket(FutexKey::Mutex(2), 256), 247);
        assert_eq!(o.futex_bucket(FutexKey::Cond(1), 256), 116);
    }

    #[test]
    fn distinct_words_spread_over_the_buckets_and_collide_only_by_hash() {
        let o = objects(256);
        let buckets: std::collections::BTreeSet<usize> = (0..256).map(|m| o.futex_bucket(FutexKey::Mutex(m), 256)).collect();
        // 256 keys into 256 buckets: about 1 - 1/e of them used (162), never one bucket for all.
        assert!((140..=185).contains(&buckets.len()), "{} buckets used", buckets.len());
    }
}

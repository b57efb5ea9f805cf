//! One guest kernel per VM: the state the VM's kernel owns (`Sim::guests[vm]`).
//!
//! Ids stay host-wide (`ThreadId`, `LockId`, `VcpuId` index the host-wide `Sim::threads`,
//! `Sim::locks` and `Sim::vcpus` tables), so a guest kernel holds the ids of its own threads and
//! vCPUs; the thread records and spinlocks themselves are still in those tables (see
//! docs/architecture.md, "What is left of the split").

use super::config::GuestConfig;
use super::objects::{futex_bucket, Shootdown, SyncObjects};
use super::spinlock::Spinlock;
use super::thread::FutexKey;
use crate::ids::{LockId, ThreadId, VcpuId, VmId};
use crate::time::Nanos;

pub struct GuestKernel {
    pub vm: VmId,
    /// The VM's name (for error reports).
    pub name: String,
    pub config: GuestConfig,
    /// Its vCPUs, by index within the VM (host-wide ids).
    pub vcpus: Vec<VcpuId>,
    /// Its threads (host-wide ids).
    pub threads: Vec<ThreadId>,
    pub objects: SyncObjects,
    /// TLB shootdowns, by id (an id travels in the IPI payload); ids in `free_shootdowns` are
    /// finished and reused.
    pub shootdowns: Vec<Shootdown>,
    pub free_shootdowns: Vec<u32>,
    pub live_threads: usize,
    pub blocked_threads: usize,
    /// Round-robin cursor for the idle-vCPU search of wake placement.
    pub wake_cursor: usize,
}

impl GuestKernel {
    /// A new spinlock of the guest's kind in the host-wide lock table.
    fn new_lock(&self, locks: &mut Vec<Spinlock>, class: &str) -> LockId {
        let id = LockId(locks.len() as u32);
        locks.push(Spinlock::new(self.config.spinlock, class));
        id
    }

    /// The bucket spinlock of a futex, created on first use; futexes hashing to the same bucket
    /// share it.
    pub fn futex_bucket_lock(&mut self, key: FutexKey, locks: &mut Vec<Spinlock>, class: &str) -> LockId {
        if let Some(l) = self.objects.bucket_lock.get(&key) {
            return *l;
        }
        let buckets = self.config.futex_buckets;
        let bucket = futex_bucket(key, buckets);
        let shared = self.objects.bucket_lock.iter().find(|(k, _)| futex_bucket(**k, buckets) == bucket).map(|(_, l)| *l);
        let lock = shared.unwrap_or_else(|| self.new_lock(locks, class));
        self.objects.bucket_lock.insert(key, lock);
        lock
    }

    /// `sem->wait_lock` of the VM's mm, created on first contention.
    pub fn mm_sem_wait_lock(&mut self, locks: &mut Vec<Spinlock>, class: &str) -> LockId {
        if let Some(lock) = self.objects.mm_sem.wait_lock {
            return lock;
        }
        let lock = self.new_lock(locks, class);
        self.objects.mm_sem.wait_lock = Some(lock);
        lock
    }

    /// Record a new TLB shootdown of `initiator` waiting for `acks` acknowledgements.
    pub fn start_shootdown(&mut self, initiator: ThreadId, acks: u32, pages: u32, now: Nanos) -> u32 {
        let record = Shootdown { initiator, pending_acks: acks, pages, started: now };
        match self.free_shootdowns.pop() {
            Some(id) => {
                self.shootdowns[id as usize] = record;
                id
            }
            None => {
                self.shootdowns.push(record);
                (self.shootdowns.len() - 1) as u32
            }
        }
    }

    /// A recipient acknowledged shootdown `id`; returns its initiator when it was the last one.
    pub fn ack_shootdown(&mut self, id: u32) -> Option<ThreadId> {
        let sd = &mut self.shootdowns[id as usize];
        sd.pending_acks -= 1;
        (sd.pending_acks == 0).then_some(sd.initiator)
    }

    /// The initiator checks shootdown `id`: when every acknowledgement is in, it is finished
    /// (its id freed) and its latency returned.
    pub fn finish_shootdown(&mut self, id: u32, now: Nanos) -> Option<Nanos> {
        let sd = &self.shootdowns[id as usize];
        if sd.pending_acks != 0 {
            return None;
        }
        let latency = now - sd.started;
        self.free_shootdowns.push(id);
        Some(latency)
    }
}

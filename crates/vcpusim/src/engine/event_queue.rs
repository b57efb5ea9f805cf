//! A min-heap of timed events with FIFO order among equal times and O(log n) cancellation.
//!
//! Issue 15 part 1: an *indexed* binary heap. The heap holds compact 16-byte keys (time, and a
//! tag packing the push sequence number above the slot of the payload); the payloads live apart
//! in a slab of slots, each slot knowing where its key sits in the heap. So:
//! - `cancel` takes the key out of the heap at once (no cancelled entries left behind to skip,
//!   no set of cancelled ids to hash on every pop): the heap holds exactly the live events;
//! - `replace` (a re-armed slice end or policy timer) moves the key of the pending event to its
//!   new time in place, reusing its slot, so a pCPU never has more than one slice end queued
//!   however often its policy reschedules it (Xen's `set_timer` on `sd->s_timer`, which
//!   re-inserts the one timer of the pCPU in `timer.c`, not a new one);
//! - an `EventId` names a slot and its generation (bumped each time the slot is filled), so
//!   cancelling an event that already fired or was cancelled (its slot since reused by another
//!   push) is harmless, as before.
//!
//! The order is what it was with the lazily cancelled `BinaryHeap` (kept until issue 15): by
//! time, then by push sequence (every `push` and `replace` takes the next sequence number, as the
//! push after a cancel did), so every run pops the same events in the same order.

use crate::time::Nanos;

/// Handle of a scheduled event, for cancellation: its slot (low 32 bits) and that slot's
/// generation when it was filled (high 32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventId(u64);

/// Bits of a tag that hold the slot: at most 2^24 (16.7 M) events pending at once.
const SLOT_BITS: u32 = 24;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
/// Sequence numbers use the other 40 bits (1.1e12 pushes); when they run out the pending events
/// are renumbered in order (`renumber`), which changes no order.
const SEQ_LIMIT: u64 = 1 << (64 - SLOT_BITS);
/// `Slot::pos` of a free slot.
const FREE: u32 = u32::MAX;

impl EventId {
    #[inline(always)]
    fn new(slot: usize, gen: u32) -> Self {
        EventId(((gen as u64) << 32) | slot as u64)
    }
    #[inline(always)]
    fn slot(self) -> usize {
        (self.0 & 0xFFFF_FFFF) as usize
    }
    #[inline(always)]
    fn gen(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// A heap entry: ordered by time, then by tag (whose high bits are the sequence number, unique,
/// so the slot bits never decide).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    at: Nanos,
    tag: u64,
}

impl Key {
    #[inline(always)]
    fn slot(self) -> usize {
        (self.tag & SLOT_MASK) as usize
    }
}

/// Where a pending event's key is (`FREE`: no pending event in this slot), and how many times
/// the slot was filled (wrapping: an id is only ever held while, or shortly after, its event is
/// pending, never across 2^32 reuses of its slot).
#[derive(Clone, Copy)]
struct Slot {
    pos: u32,
    gen: u32,
}

pub struct EventQueue<E> {
    heap: Vec<Key>,
    slots: Vec<Slot>,
    payloads: Vec<Option<E>>,
    free: Vec<u32>,
    next_seq: u64,
    /// Largest `len()` seen.
    peak_len: usize,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue { heap: Vec::new(), slots: Vec::new(), payloads: Vec::new(), free: Vec::new(), next_seq: 0, peak_len: 0 }
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedule `event` at `at`.
    pub fn push(&mut self, at: Nanos, event: E) -> EventId {
        let slot = match self.free.pop() {
            Some(s) => s as usize,
            None => {
                let s = self.slots.len();
                assert!((s as u64) <= SLOT_MASK, "event queue: more than {} events pending at once", SLOT_MASK + 1);
                self.slots.push(Slot { pos: FREE, gen: 0 });
                self.payloads.push(None);
                s
            }
        };
        let tag = self.next_tag(slot);
        self.payloads[slot] = Some(event);
        let pos = self.heap.len();
        self.heap.push(Key { at, tag });
        let gen = self.slots[slot].gen.wrapping_add(1);
        self.slots[slot] = Slot { pos: pos as u32, gen };
        self.sift_up(pos);
        self.peak_len = self.peak_len.max(self.heap.len());
        EventId::new(slot, gen)
    }

    /// Cancel `old` (if still pending) and schedule `event` at `at`: the same as `cancel` then
    /// `push`, with the same sequence number, but the pending event's slot and heap entry are
    /// reused and moved, so a re-armed timer never leaves a second entry behind.
    pub fn replace(&mut self, old: Option<EventId>, at: Nanos, event: E) -> EventId {
        let Some(slot) = old.and_then(|id| self.pending_slot(id)) else {
            return self.push(at, event);
        };
        let tag = self.next_tag(slot);
        self.payloads[slot] = Some(event);
        let pos = self.slots[slot].pos as usize;
        let before = self.heap[pos];
        let key = Key { at, tag };
        self.heap[pos] = key;
        let gen = self.slots[slot].gen.wrapping_add(1);
        self.slots[slot].gen = gen;
        // The sequence only grows, so a key at the same time or later can only move down.
        if key < before {
            self.sift_up(pos);
        } else {
            self.sift_down(pos);
        }
        EventId::new(slot, gen)
    }

    /// Cancel a pending event. Cancelling one that already fired or was cancelled is harmless.
    pub fn cancel(&mut self, id: EventId) {
        if let Some(slot) = self.pending_slot(id) {
            let pos = self.slots[slot].pos as usize;
            self.remove_at(pos);
        }
    }

    /// The earliest event, removed.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let top = *self.heap.first()?;
        let event = self.remove_at(0);
        Some((top.at, event))
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Nanos> {
        self.heap.first().map(|k| k.at)
    }

    /// Events pending.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The largest `len()` so far: the memory the queue needed.
    pub fn peak_len(&self) -> usize {
        self.peak_len
    }

    /// Cancelled entries popped and thrown away so far: none since cancellation removes them at
    /// once (kept for `vcpusim bench`, which reports it beside older builds).
    pub fn skipped(&self) -> u64 {
        0
    }

    /// Bytes of one heap entry (the key; payloads are stored apart): what the bare-heap baseline
    /// of `vcpusim bench` pushes and pops, so that its comparison moves the same memory.
    pub const ENTRY_BYTES: usize = std::mem::size_of::<Key>();

    /// The slot of `id` if that event is still pending.
    #[inline]
    fn pending_slot(&self, id: EventId) -> Option<usize> {
        let slot = id.slot();
        let s = self.slots.get(slot)?;
        (s.pos != FREE && s.gen == id.gen()).then_some(slot)
    }

    #[inline]
    fn next_tag(&mut self, slot: usize) -> u64 {
        if self.next_seq == SEQ_LIMIT {
            self.renumber();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        (seq << SLOT_BITS) | slot as u64
    }

    /// Give the pending events sequence numbers 0.. in their current order (time, then
    /// sequence), so numbering can go on; the order of every pair stays what it was, and ids
    /// (slot and generation) are untouched. Only reached after 2^40 pushes.
    #[cold]
    fn renumber(&mut self) {
        let mut order: Vec<usize> = (0..self.heap.len()).collect();
        order.sort_by_key(|&i| self.heap[i]);
        let mut sorted = Vec::with_capacity(self.heap.len());
        for (seq, &i) in order.iter().enumerate() {
            let k = self.heap[i];
            let slot = k.slot();
            let tag = ((seq as u64) << SLOT_BITS) | slot as u64;
            sorted.push(Key { at: k.at, tag });
            self.slots[slot].pos = seq as u32;
        }
        // A sorted array is a valid min-heap.
        self.heap = sorted;
        self.next_seq = self.heap.len() as u64;
    }

    /// Take out the key at heap position `pos`, free its slot and return its payload.
    fn remove_at(&mut self, pos: usize) -> E {
        let key = self.heap[pos];
        let slot = key.slot();
        let last = self.heap.pop().expect("pos is in the heap");
        if pos < self.heap.len() {
            self.heap[pos] = last;
            self.slots[last.slot()].pos = pos as u32;
            if last < key {
                self.sift_up(pos);
            } else {
                self.sift_down(pos);
            }
        }
        self.slots[slot].pos = FREE;
        self.free.push(slot as u32);
        self.payloads[slot].take().expect("a pending slot holds its payload")
    }

    /// Move the key at `pos` up to its place.
    #[inline]
    fn sift_up(&mut self, mut pos: usize) {
        let key = self.heap[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            let p = self.heap[parent];
            if p <= key {
                break;
            }
            self.heap[pos] = p;
            self.slots[p.slot()].pos = pos as u32;
            pos = parent;
        }
        self.heap[pos] = key;
        self.slots[key.slot()].pos = pos as u32;
    }

    /// Move the key at `pos` down to its place.
    #[inline]
    fn sift_down(&mut self, mut pos: usize) {
        let key = self.heap[pos];
        let n = self.heap.len();
        loop {
            let left = 2 * pos + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.heap[right] < self.heap[left] { right } else { left };
            let c = self.heap[child];
            if key <= c {
                break;
            }
            self.heap[pos] = c;
            self.slots[c.slot()].pos = pos as u32;
            pos = child;
        }
        self.heap[pos] = key;
        self.slots[key.slot()].pos = pos as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn pops_in_time_then_fifo_order() {
        let mut q = EventQueue::new();
        q.push(30, "c");
        q.push(10, "a1");
        q.push(20, "b");
        q.push(10, "a2");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(10, "a1"), (10, "a2"), (20, "b"), (30, "c")]);
    }

    #[test]
    fn cancelled_events_never_fire() {
        let mut q = EventQueue::new();
        let a = q.push(10, 1);
        q.push(20, 2);
        let c = q.push(5, 3);
        q.cancel(a);
        q.cancel(c);
        q.cancel(c);
        assert_eq!(q.len(), 1, "cancelled events leave the heap at once");
        assert_eq!(q.peek_time(), Some(20));
        assert_eq!(q.pop(), Some((20, 2)));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn a_stale_id_never_cancels_the_event_that_reused_its_slot() {
        let mut q = EventQueue::new();
        let a = q.push(10, 'a');
        assert_eq!(q.pop(), Some((10, 'a')));
        let b = q.push(20, 'b'); // reuses a's slot
        assert_ne!(a, b);
        q.cancel(a);
        assert_eq!(q.pop(), Some((20, 'b')));
        let c = q.push(30, 'c');
        q.cancel(c);
        let d = q.replace(Some(c), 40, 'd'); // c is gone: a plain push
        assert_eq!(q.len(), 1);
        q.cancel(c);
        assert_eq!(q.pop(), Some((40, 'd')));
        q.cancel(d);
        assert!(q.is_empty());
    }

    #[test]
    fn replace_keeps_one_entry_and_orders_as_cancel_then_push() {
        // Re-arm one timer many times between other pushes: the queue never holds more than
        // the live events, and pops exactly what cancel-then-push would.
        let mut q = EventQueue::new();
        let mut timer = None;
        for i in 0..1000u64 {
            timer = Some(q.replace(timer, 500 + (i * 7919) % 300, ('t', i)));
            assert!(q.len() <= 1 + i as usize / 100 + 1);
            if i % 100 == 0 {
                q.push(500 + i % 300, ('o', i));
            }
        }
        assert_eq!(q.len(), 11);
        assert_eq!(q.peak_len(), 11);
        let popped: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        // The timer's last arming was i = 999 at 500 + 999*7919 % 300; it ties after every
        // earlier push at the same time.
        let t_at = 500 + (999 * 7919) % 300;
        let mut expected: Vec<(u64, u64, (char, u64))> = (0..10).map(|k| (500 + (k * 100) % 300, k * 100, ('o', k * 100))).collect();
        expected.push((t_at, 999, ('t', 999)));
        expected.sort_by_key(|&(at, seq, _)| (at, seq));
        assert_eq!(popped, expected.into_iter().map(|(at, _, e)| (at, e)).collect::<Vec<_>>());
    }

    /// A reference model: the lazily cancelled queue this one replaced, as a sorted set.
    struct Model {
        set: BTreeSet<(u64, u64, u32)>,
        live: std::collections::HashMap<u64, (u64, u32)>,
        seq: u64,
    }

    #[test]
    fn matches_a_sorted_set_under_random_pushes_cancels_and_replaces() {
        let mut q = EventQueue::new();
        let mut m = Model { set: BTreeSet::new(), live: Default::default(), seq: 0 };
        let mut ids: Vec<(EventId, u64)> = Vec::new(); // (queue id, model seq)
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut rnd = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut now = 0;
        for step in 0..20_000u32 {
            match rnd(10) {
                0..=3 => {
                    let at = now + rnd(50);
                    let id = q.push(at, step);
                    m.set.insert((at, m.seq, step));
                    m.live.insert(m.seq, (at, step));
                    ids.push((id, m.seq));
                    m.seq += 1;
                }
                4 | 5 if !ids.is_empty() => {
                    let (id, seq) = ids[rnd(ids.len() as u64) as usize];
                    q.cancel(id);
                    if let Some((at, e)) = m.live.remove(&seq) {
                        m.set.remove(&(at, seq, e));
                    }
                }
                6 if !ids.is_empty() => {
                    let k = rnd(ids.len() as u64) as usize;
                    let (id, seq) = ids[k];
                    let at = now + rnd(50);
                    let new = q.replace(Some(id), at, step);
                    if let Some((old_at, e)) = m.live.remove(&seq) {
                        m.set.remove(&(old_at, seq, e));
                    }
                    m.set.insert((at, m.seq, step));
                    m.live.insert(m.seq, (at, step));
                    ids[k] = (new, m.seq);
                    m.seq += 1;
                }
                _ => {
                    let got = q.pop();
                    let want = m.set.pop_first().map(|(at, seq, e)| {
                        m.live.remove(&seq);
                        (at, e)
                    });
                    assert_eq!(got, want, "step {step}");
                    if let Some((at, _)) = got {
                        now = at;
                    }
                }
            }
            assert_eq!(q.len(), m.set.len());
            assert_eq!(q.peek_time(), m.set.first().map(|&(at, _, _)| at));
        }
    }

    impl<E: Copy> EventQueue<E> {
        /// The pending events in pop order, without popping.
        fn clone_order(&self) -> Vec<E> {
            let mut keys = self.heap.clone();
            keys.sort();
            keys.iter().map(|k| self.payloads[k.slot()].expect("pending")).collect()
        }
    }

    #[test]
    fn renumbering_keeps_the_order() {
        let mut q = EventQueue::new();
        let a = q.push(10, 'a');
        q.push(5, 'b');
        q.push(10, 'c');
        q.next_seq = SEQ_LIMIT; // as if 2^40 pushes had gone by
        q.push(10, 'd');
        q.push(5, 'e');
        assert!(q.next_seq < 10);
        let order: Vec<_> = {
            let mut r = q.clone_order();
            r.retain(|&e| e != 'a');
            r
        };
        q.cancel(a); // ids survive renumbering
        assert_eq!(order, vec!['b', 'e', 'c', 'd']);
        assert_eq!(std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect::<Vec<_>>(), order);
    }
}

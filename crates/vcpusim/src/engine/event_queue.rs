//! A min-heap of timed events with FIFO order among equal times and O(1) cancellation.
//!
//! Cancellation by generation number, compact keys, payloads stored apart:
//! - The heap (`std::collections::BinaryHeap`, so its bottom-up pop) holds 16-byte keys: the
//!   time and a tag packing the push sequence number above the slot of the payload. Payloads
//!   live apart in a slab of slots.
//! - `cancel` drops the payload and bumps nothing else: O(1), no set of cancelled ids to hash.
//!   A key whose slot holds no payload is dead: `pop` and `peek_time` throw it away when it
//!   reaches the top (one load to tell, no hashing), and when dead keys outnumber live ones (plus
//!   `COMPACT_SLACK`) the heap drops them all at once (`compact`, O(n), amortized O(1) per
//!   cancel). So the heap never holds more than `2 * live + COMPACT_SLACK + 1` keys: a credit
//!   PLE storm that re-arms a pCPU's 30 ms slice end thousands of times per slice leaves at most
//!   one live slice end per pCPU and a bounded number of dead ones, where a lazily cancelled
//!   heap keeps every superseded one for its 30 ms (229 k entries at 64 pCPUs).
//! - An `EventId` names a slot and its generation (bumped each time the slot is filled), so
//!   cancelling an event that already fired or was cancelled (its slot since reused by another
//!   push) is harmless.
//!
//! - The earliest key may wait in a slot beside the heap (`front`) instead of in it: a push
//!   earlier than everything pending (most of them: a handler often schedules the very next
//!   event, such as a dispatch at `now` or the end of a short step) takes the slot, and the next
//!   pop takes it back, with no sift either way (about 6 in 10 pushes of the ASPLOS'13 figures
//!   and half of the hybrid ones). Invariant: `front`, when set, is earlier than every key in
//!   the heap, so the earliest pending key is `front` or else the heap's top.
//!
//! Tried and dropped: an indexed heap (each slot knowing its key's position, cancel removing it at
//! once) keeps the heap exact but pays a position update per level of every sift, 6-9% more
//! instructions per event on the quickstart than a lazily cancelled heap (callgrind), where this
//! one pays a load per pop.
//!
//! The order is that of a lazily cancelled `BinaryHeap<Entry>`: by time, then by push sequence
//! (every `push` and `replace` takes the next sequence number, as a push after a cancel would
//! there), so every run pops the same events in the same order.

use crate::time::Nanos;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Handle of a scheduled event, for cancellation: its slot (low 32 bits) and that slot's
/// generation when it was filled (high 32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventId(u64);

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

/// Bits of a tag that hold the slot: at most 2^24 (16.7 M) keys in the heap at once.
const SLOT_BITS: u32 = 24;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
/// Sequence numbers use the other 40 bits (1.1e12 pushes); when they run out the keys are
/// renumbered in order (`renumber`), which changes no order.
const SEQ_LIMIT: u64 = 1 << (64 - SLOT_BITS);
/// Dead keys tolerated beyond the live count before `compact` runs: keeps compaction rare when
/// few events are pending.
pub const COMPACT_SLACK: usize = 16;

/// A heap key: ordered by time, then by tag (whose high bits are the sequence number, unique,
/// so the slot bits never decide). `Ord` is reversed: `BinaryHeap` is a max-heap and the
/// earliest must be on top.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    at: Nanos,
    tag: u64,
}

impl Key {
    #[inline(always)]
    fn slot(self) -> usize {
        (self.tag & SLOT_MASK) as usize
    }
    /// (time, tag) as one number, ordered as the pair: the heap's sifts compare it in one
    /// 128-bit comparison where the pair took two compares and a select.
    #[inline(always)]
    fn rank(self) -> u128 {
        ((self.at as u128) << 64) | self.tag as u128
    }
}

impl Ord for Key {
    #[inline(always)]
    fn cmp(&self, other: &Self) -> Ordering {
        other.rank().cmp(&self.rank())
    }
}
impl PartialOrd for Key {
    #[inline(always)]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
    // The comparisons `BinaryHeap` makes, each one 128-bit compare (reversed: earliest on top).
    #[inline(always)]
    fn lt(&self, other: &Self) -> bool {
        other.rank() < self.rank()
    }
    #[inline(always)]
    fn le(&self, other: &Self) -> bool {
        other.rank() <= self.rank()
    }
    #[inline(always)]
    fn gt(&self, other: &Self) -> bool {
        other.rank() > self.rank()
    }
    #[inline(always)]
    fn ge(&self, other: &Self) -> bool {
        other.rank() >= self.rank()
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Key>,
    /// A key earlier than every key in `heap` (see the module doc), or none.
    front: Option<Key>,
    /// Each slot's payload while its event is pending (None: free, or cancelled with its key
    /// still in the heap).
    payloads: Vec<Option<E>>,
    /// Each slot's generation (wrapping: an id is only ever held while, or shortly after, its
    /// event is pending, never across 2^32 reuses of its slot).
    gens: Vec<u32>,
    /// Slots whose key left the heap.
    free: Vec<u32>,
    /// Dead keys in the heap and `front`.
    dead: usize,
    next_seq: u64,
    /// Largest number of keys held (heap and `front`, dead keys included): the memory the
    /// queue needed.
    peak_len: usize,
    /// Dead keys thrown away so far (at the top or by compaction).
    skipped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            front: None,
            payloads: Vec::new(),
            gens: Vec::new(),
            free: Vec::new(),
            dead: 0,
            next_seq: 0,
            peak_len: 0,
            skipped: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedule `event` at `at`.
    #[inline(always)]
    pub fn push(&mut self, at: Nanos, event: E) -> EventId {
        let slot = match self.free.pop() {
            Some(s) => s as usize,
            None => {
                let s = self.payloads.len();
                assert!((s as u64) <= SLOT_MASK, "event queue: more than {} events pending at once", SLOT_MASK + 1);
                self.payloads.push(None);
                self.gens.push(0);
                s
            }
        };
        if self.next_seq == SEQ_LIMIT {
            self.renumber();
        }
        let tag = (self.next_seq << SLOT_BITS) | slot as u64;
        self.next_seq += 1;
        self.payloads[slot] = Some(event);
        let gen = self.gens[slot].wrapping_add(1);
        self.gens[slot] = gen;
        self.push_key(Key { at, tag });
        self.peak_len = self.peak_len.max(self.keys());
        EventId::new(slot, gen)
    }

    /// Hold `key`: in `front` when it is earlier than every key held (the one it displaces
    /// goes to the heap, still earlier than all there), else in the heap.
    #[inline(always)]
    fn push_key(&mut self, key: Key) {
        match self.front {
            None if self.heap.peek().is_none_or(|top| key.rank() < top.rank()) => self.front = Some(key),
            Some(f) if key.rank() < f.rank() => {
                self.heap.push(f);
                self.front = Some(key);
            }
            _ => self.heap.push(key),
        }
    }

    /// The earliest key held (`front`, else the heap's top).
    #[inline(always)]
    fn first_key(&self) -> Option<Key> {
        self.front.or_else(|| self.heap.peek().copied())
    }

    /// Keys held, dead ones included.
    #[inline(always)]
    fn keys(&self) -> usize {
        self.heap.len() + self.front.is_some() as usize
    }

    /// Cancel `old` (if still pending) and schedule `event` at `at`: a re-armed slice end or
    /// policy timer. The same as `cancel` then `push`.
    #[inline]
    pub fn replace(&mut self, old: Option<EventId>, at: Nanos, event: E) -> EventId {
        if let Some(id) = old {
            self.cancel(id);
        }
        self.push(at, event)
    }

    /// Cancel a pending event. Cancelling one that already fired or was cancelled is harmless.
    #[inline]
    pub fn cancel(&mut self, id: EventId) {
        let slot = id.slot();
        if self.gens.get(slot) == Some(&id.gen()) && self.payloads[slot].take().is_some() {
            self.dead += 1;
            if self.dead > self.keys() - self.dead + COMPACT_SLACK {
                self.compact();
            }
        }
    }

    /// Remove the earliest key held, `key` (`first_key`): its event if live; a cancelled one is
    /// counted as skipped and dropped (`None`).
    #[inline(always)]
    fn remove_top(&mut self, key: Key) -> Option<(Nanos, E)> {
        if self.front.take().is_none() {
            self.heap.pop();
        }
        let slot = key.slot();
        self.free.push(slot as u32);
        let event = self.payloads[slot].take();
        if event.is_none() {
            self.dead -= 1;
            self.skipped += 1;
        }
        event.map(|e| (key.at, e))
    }

    /// The earliest live event, removed.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        while let Some(key) = self.first_key() {
            if let Some(event) = self.remove_top(key) {
                return Some(event);
            }
        }
        None
    }

    /// The earliest live event if it is due at or before `until`, removed; `None` if there is
    /// none or it is later (it stays). The event loop's step: one look at the top where
    /// `peek_time` then `pop` took two.
    #[inline]
    pub fn pop_until(&mut self, until: Nanos) -> Option<(Nanos, E)> {
        loop {
            let key = self.first_key()?;
            if key.at > until && self.payloads[key.slot()].is_some() {
                return None;
            }
            if let Some(event) = self.remove_top(key) {
                return Some(event);
            }
        }
    }

    /// Time of the earliest live event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Nanos> {
        while let Some(key) = self.first_key() {
            if self.payloads[key.slot()].is_some() {
                return Some(key.at);
            }
            self.remove_top(key);
        }
        None
    }

    /// Live events pending.
    pub fn len(&self) -> usize {
        self.keys() - self.dead
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most keys held so far, dead keys included: the memory the queue needed.
    pub fn peak_len(&self) -> usize {
        self.peak_len
    }

    /// Cancelled keys thrown away so far (popped at the top or compacted; never handed out).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Bytes of one heap entry (the key; payloads are stored apart): what the bare-heap baseline
    /// of `vcpusim bench` pushes and pops, so that its comparison moves the same memory.
    pub const ENTRY_BYTES: usize = std::mem::size_of::<Key>();

    /// Drop every dead key and free its slot (the heap is rebuilt from the live keys, O(n)).
    #[cold]
    fn compact(&mut self) {
        if let Some(f) = self.front.filter(|f| self.payloads[f.slot()].is_none()) {
            self.free.push(f.slot() as u32);
            self.front = None;
        }
        let (payloads, free) = (&self.payloads, &mut self.free);
        self.heap.retain(|k| {
            let live = payloads[k.slot()].is_some();
            if !live {
                free.push(k.slot() as u32);
            }
            live
        });
        self.skipped += self.dead as u64;
        self.dead = 0;
    }

    /// Give the keys in the heap sequence numbers 0.. in their current order (time, then
    /// sequence), so numbering can go on; the order of every pair stays what it was, and ids
    /// (slot and generation) are untouched. Only reached after 2^40 pushes.
    #[cold]
    fn renumber(&mut self) {
        let mut keys = std::mem::take(&mut self.heap).into_vec();
        keys.extend(self.front.take());
        keys.sort_by(|a, b| b.cmp(a)); // earliest first (Ord is reversed)
        for (seq, k) in keys.iter_mut().enumerate() {
            k.tag = ((seq as u64) << SLOT_BITS) | k.slot() as u64;
        }
        self.next_seq = keys.len() as u64;
        self.heap = BinaryHeap::from(keys);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// `Key`'s comparisons all say one order, reversed (the earliest is the greatest): the heap
    /// calls only some of them (`<=`, `>=` in `BinaryHeap`'s sifts), so a wrong one of the others
    /// would pass every queue test and misorder the first caller to use it.
    #[test]
    fn key_comparisons_agree_with_each_other_reversed() {
        let keys = [(0, 0), (0, 1), (0, u64::MAX), (1, 0), (5, 1 << SLOT_BITS), (5, (1 << SLOT_BITS) | 3), (Nanos::MAX, 0)];
        for &(at_a, tag_a) in &keys {
            for &(at_b, tag_b) in &keys {
                let (a, b) = (Key { at: at_a, tag: tag_a }, Key { at: at_b, tag: tag_b });
                let expected = (at_b, tag_b).cmp(&(at_a, tag_a));
                assert_eq!(a.cmp(&b), expected, "{a:?} vs {b:?}");
                assert_eq!(a.partial_cmp(&b), Some(expected));
                assert_eq!(a < b, expected == Ordering::Less, "{a:?} < {b:?}");
                assert_eq!(a <= b, expected != Ordering::Greater, "{a:?} <= {b:?}");
                assert_eq!(a > b, expected == Ordering::Greater, "{a:?} > {b:?}");
                assert_eq!(a >= b, expected != Ordering::Less, "{a:?} >= {b:?}");
            }
        }
    }

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
    fn pop_until_stops_at_the_first_live_event_past_the_limit() {
        let mut q = EventQueue::new();
        let a = q.push(5, 'a');
        q.push(10, 'b');
        q.push(20, 'c');
        q.cancel(a);
        assert_eq!(q.pop_until(9), None, "the dead key at 5 is no event");
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop_until(10), Some((10, 'b')));
        assert_eq!(q.pop_until(19), None);
        assert_eq!(q.pop_until(u64::MAX), Some((20, 'c')));
        assert_eq!(q.pop_until(u64::MAX), None);
        assert!(q.is_empty());
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
        assert_eq!(q.len(), 1, "one live event");
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
    fn replace_keeps_the_heap_bounded_and_orders_as_cancel_then_push() {
        // Re-arm one timer many times between other pushes: the heap never holds more than
        // twice the live events and the slack, and pops exactly what cancel-then-push would.
        let mut q = EventQueue::new();
        let mut timer = None;
        for i in 0..1000u64 {
            timer = Some(q.replace(timer, 500 + (i * 7919) % 300, ('t', i)));
            assert!(q.len() <= 1 + i as usize / 100 + 1);
            assert!(q.heap.len() <= 2 * q.len() + COMPACT_SLACK + 1, "dead keys are compacted");
            if i % 100 == 0 {
                q.push(500 + i % 300, ('o', i));
            }
        }
        assert_eq!(q.len(), 11);
        assert!(q.peak_len() <= 2 * 11 + COMPACT_SLACK + 1, "{}", q.peak_len());
        let popped: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        // The timer's last arming was i = 999 at 500 + 999*7919 % 300; it ties after every
        // earlier push at the same time.
        let t_at = 500 + (999 * 7919) % 300;
        let mut expected: Vec<(u64, u64, (char, u64))> = (0..10).map(|k| (500 + (k * 100) % 300, k * 100, ('o', k * 100))).collect();
        expected.push((t_at, 999, ('t', 999)));
        expected.sort_by_key(|&(at, seq, _)| (at, seq));
        assert_eq!(popped, expected.into_iter().map(|(at, _, e)| (at, e)).collect::<Vec<_>>());
    }

    /// A reference model: a lazily cancelled queue, as a sorted set.
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
        let mut rng = crate::engine::rng::stream(1, "event_queue test");
        let mut rnd = |n: u64| rand::Rng::random_range(&mut rng, 0..n);
        let mut now = 0;
        let mut cancelled = 0u64; // cancels and replaces that took a pending event
        let mut most_keys = 0; // the most keys held at the end of a step (a push's is its peak)
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
                        cancelled += 1;
                    }
                }
                6 if !ids.is_empty() => {
                    let k = rnd(ids.len() as u64) as usize;
                    let (id, seq) = ids[k];
                    let at = now + rnd(50);
                    let new = q.replace(Some(id), at, step);
                    if let Some((old_at, e)) = m.live.remove(&seq) {
                        m.set.remove(&(old_at, seq, e));
                        cancelled += 1;
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
            assert!(q.keys() <= 2 * q.len() + COMPACT_SLACK + 1);
            most_keys = most_keys.max(q.keys());
            if let (Some(f), Some(top)) = (q.front, q.heap.peek()) {
                assert!(f.rank() < top.rank(), "step {step}: the front key is not the earliest");
            }
        }
        // Drained, every cancelled key has been thrown away (at the top or by compaction) and
        // counted once as skipped: `vcpusim bench` reports that count as stale events.
        while q.pop().is_some() {}
        assert!(cancelled > 1000);
        assert_eq!((q.keys(), q.skipped()), (0, cancelled));
        assert_eq!(q.peak_len(), most_keys);
    }

    #[test]
    fn renumbering_keeps_the_order() {
        let mut q = EventQueue::new();
        q.push(1, 'x'); // slot 0
        q.push(10, 'a'); // slot 1
        q.push(5, 'b');
        let z = q.push(7, 'z');
        assert_eq!(q.pop(), Some((1, 'x'))); // frees slot 0
        q.push(10, 'c'); // slot 0: pushed after 'a' at the same time, in a lower slot
        q.next_seq = SEQ_LIMIT; // as if 2^40 pushes had gone by
        q.push(10, 'd');
        q.push(5, 'e');
        assert!(q.next_seq < 10);
        // Ids survive renumbering.
        q.cancel(z);
        // Same time: push order ('a' before 'c', though 'c' has the lower slot), then 'd'.
        assert_eq!(std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect::<Vec<_>>(), vec!['b', 'e', 'a', 'c', 'd']);
    }
}

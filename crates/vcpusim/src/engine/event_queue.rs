//! A min-heap of timed events with FIFO order among equal times and O(1) cancellation.
//!
//! Cancellation is lazy: a cancelled event stays in the heap and is skipped when it reaches the
//! top, which keeps `cancel` O(1) and `pop` amortized O(log n).

use crate::time::Nanos;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashSet};

/// Handle of a scheduled event, for cancellation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventId(u64);

struct Entry<E> {
    at: Nanos,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap, we want the earliest (then first-scheduled) on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.cmp(&self.at).then_with(|| other.seq.cmp(&self.seq))
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    cancelled: HashSet<u64>,
    /// Largest `len()` seen (cancelled entries not yet skipped included): what the heap holds.
    peak_len: usize,
    /// Cancelled entries popped and skipped so far.
    skipped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue { heap: BinaryHeap::new(), next_seq: 0, cancelled: HashSet::new(), peak_len: 0, skipped: 0 }
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, at: Nanos, event: E) -> EventId {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, event });
        self.peak_len = self.peak_len.max(self.heap.len());
        EventId(seq)
    }

    /// Cancel a pending event. Cancelling one that already fired or was cancelled is harmless.
    pub fn cancel(&mut self, id: EventId) {
        if id.0 < self.next_seq {
            self.cancelled.insert(id.0);
        }
    }

    /// The earliest live event, removed.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        while let Some(entry) = self.heap.pop() {
            if !self.cancelled.is_empty() && self.cancelled.remove(&entry.seq) {
                self.skipped += 1;
                continue;
            }
            return Some((entry.at, entry.event));
        }
        None
    }

    /// Time of the earliest live event.
    pub fn peek_time(&mut self) -> Option<Nanos> {
        while let Some(top) = self.heap.peek() {
            if self.cancelled.contains(&top.seq) {
                let seq = top.seq;
                self.heap.pop();
                self.cancelled.remove(&seq);
                self.skipped += 1;
                continue;
            }
            return Some(top.at);
        }
        None
    }

    /// Events in the heap, including cancelled ones not yet skipped.
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

    /// Cancelled entries popped and thrown away so far (never handed to the caller).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Bytes of one heap entry (key and payload): what the bare-heap baseline of `vcpusim
    /// bench` pushes and pops, so that its comparison moves the same memory.
    pub const ENTRY_BYTES: usize = std::mem::size_of::<Entry<E>>();
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(q.peek_time(), Some(20));
        assert_eq!(q.pop(), Some((20, 2)));
        assert_eq!(q.pop(), None);
    }
}

//! The discrete-event engine: the event queue and seeded random streams.

pub mod event_queue;
pub mod rng;

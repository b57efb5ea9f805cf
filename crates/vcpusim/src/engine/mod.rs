//! The discrete-event engine: the event queue and seeded random streams.

//! vcpusim: a deterministic discrete-event simulator of vCPU scheduling on consolidated hosts.
//!
//! Layers (see docs/architecture.md): `engine` (time, events, random streams) ->
//! `hardware` (pCPUs, topology, virtualization costs, PLE) -> `hypervisor` (vCPU states, the
//! policy interface, the policies) -> `guest` (kernel: threads, scheduler, spinlocks, futex,
//! IPIs, TLB shootdown) -> `workload` (programs). `sim` ties them into one run; `metrics`
//! collects what happened; `scenario` reads TOML; `api` is what the Python bindings call.

pub mod api;
pub mod bench;
pub mod engine;
pub mod error;
pub mod guest;
pub mod hardware;
pub mod hypervisor;
pub mod ids;
pub mod metrics;
pub mod output;
pub mod params;
pub mod run;
pub mod scenario;
pub mod sim;
pub mod time;
pub mod vmexit;
pub mod workload;

pub use error::SimError;

//! vcpusim: a deterministic discrete-event simulator of vCPU scheduling on consolidated hosts.
//!
//! Layers (see docs/architecture.md): `engine` (time, events, random streams) ->
//! `hardware` (pCPUs, topology, virtualization costs, PLE) -> `hypervisor` (vCPU states, the
//! policy interface, the policies). The host (`sim`: vCPU execution, IPI delivery, pools) and
//! one guest kernel per VM (`guest`: threads, scheduler, spinlocks, futex, IPIs, TLB shootdown;
//! `workload`: programs) meet at the VM-exit line (`vmexit`): exits and the guest's answers to
//! "what does this vCPU do next" (`Next`) up, upcalls and a PV area down. `metrics` collects what happened; `run` runs a scenario and serializes its results
//! (`output`); `scenario` reads TOML; `api` is what the Python bindings call; `policy` is the
//! public interface a scheduling policy written outside this crate implements.

pub mod api;
pub mod bench;
pub mod build_info;
pub mod engine;
pub mod error;
pub mod guest;
pub mod hardware;
pub mod hypervisor;
pub mod ids;
pub mod metrics;
pub mod output;
pub mod params;
pub mod policy;
pub mod run;
pub mod scenario;
pub mod sim;
pub mod time;
pub mod vmexit;
pub mod workload;

pub use error::SimError;

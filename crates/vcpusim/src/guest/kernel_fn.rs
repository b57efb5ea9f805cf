//! The guest-kernel function a vCPU is executing (its "instruction pointer"). The type belongs to
//! the VM-exit line, since the guest publishes it in the PV area: see `vmexit.rs`.

pub use crate::vmexit::KernelFn;

//! The guest-kernel function a vCPU is executing (its "instruction pointer"). The type belongs to
//! the VM-exit line, since the host reads it through the `kernel_fn` channel: see `vmexit.rs`.

pub use crate::vmexit::KernelFn;

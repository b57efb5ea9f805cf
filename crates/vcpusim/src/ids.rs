//! Dense integer identifiers. Every entity lives in a Vec indexed by its id.

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u32);
        impl $name {
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id_type!(/// A physical CPU (hardware thread) of the host.
    PcpuId);
id_type!(/// A VM (Xen domain, KVM process).
    VmId);
id_type!(/// A vCPU, numbered across the whole host.
    VcpuId);
id_type!(/// A guest thread, numbered across the whole host.
    ThreadId);
id_type!(/// A guest-kernel spinlock, numbered across the whole host.
    LockId);
id_type!(/// A cpupool (Xen `struct cpupool`): pCPUs with their own scheduler instance.
    PoolId);

//! `iperf`: the server side of an iperf 2 run in the VM, receiving from a remote client over the
//! VM's network device (seed 002 section 3.3, Table 4c, and Figure 9: "a 1Gbit network
//! environment between the server and client"; TCP throughput and UDP jitter).
//!
//! Thread 0 is iperf's server thread: `recv` in a loop (`Op::SockRecv`; iperf 2 reads 128 KiB a
//! call for TCP, `kDefault_TCPBufLen`, and one datagram for UDP), one unit of progress per
//! `recv` that returned data. Any further thread is a CPU hog in the same VM, `lookbusy`'s loop:
//! with `threads = 2` on a 1-vCPU VM, the I/O and the computation share one vCPU, the mixed
//! vCPU of seed 002 section 4.1 and Figure 9 that Credit's BOOST cannot help. The device, its
//! link and the guest's receive path are `hardware/nic.rs`, `sim/mechanisms/net_device.rs` and
//! `guest/netrx.rs`; vms.csv reports `throughput_mbps` (what `recv` returned) and, for UDP,
//! `jitter_ms` (iperf's RFC 1889 estimate).

use crate::hardware::nic::{self, NicSpec, Protocol};
use crate::params::{ParamSpec, Params};
use crate::time::MS;
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

pub struct Iperf;

const PROGRESS_UNIT: &str = "recv() calls that returned data (thread 0); a hog thread's 1 ms chunks are not counted";

/// iperf 2's TCP read size (src/Settings.cpp `kDefault_TCPBufLen = 128 * 1024`).
pub const TCP_READ_LEN: u32 = 128 * 1024;
/// iperf 2's UDP rate (`-b` default: `kDefault_UDPRate = 1024 * 1024`, 1 Mbit/s).
pub const DEFAULT_UDP_RATE_BPS: u64 = 1024 * 1024;
/// A hog thread's chunk of computation between progress points (as `lookbusy`).
const HOG_CHUNK: u64 = MS;

impl Workload for Iperf {
    fn name(&self) -> &'static str {
        "iperf"
    }
    fn describe(&self) -> &'static str {
        "iperf 2's server receiving a TCP stream (window-limited, ACKed) or paced UDP datagrams \
         over a 1 Gbit/s link through the VM's network device; further threads are CPU hogs in \
         the same VM (the mixed vCPU of seed 002 Figure 9)"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn default_threads(&self, _vcpus: u32) -> u32 {
        1
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::choice("protocol", &["tcp", "udp"], "tcp", "tcp: a TCP stream (throughput); udp: paced datagrams (jitter)."),
            ParamSpec::float(
                "udp_mbps",
                DEFAULT_UDP_RATE_BPS as f64 / 1e6,
                "UDP sending rate in Mbit/s (iperf -b; default iperf 2's 1 Mbit/s = 1024*1024 bit/s).",
            )
            .range(0.001, 1000.0),
            ParamSpec::int(
                "rcvbuf",
                nic::TCP_RMEM_DEFAULT,
                "TCP receive buffer in bytes, the most the guest advertises (Linux 4.4 tcp_rmem[1] = 87380; autotuning not modelled).",
            )
            .range(2.0 * f64::from(nic::MTU), 1e9),
            ParamSpec::duration(
                "latency",
                nic::DEFAULT_LATENCY,
                "One-way latency of a frame and of an ACK (link, NIC, Xen's relay). Assumed.",
            )
            .at_least(0.0),
            ParamSpec::int("irq_vcpu", 0, "The vCPU (index in the VM) the device's event channel is bound to."),
            ParamSpec::duration("hardirq", nic::DEFAULT_HARDIRQ, "Guest work of the device's hard IRQ. Assumed.").at_least(0.0),
            ParamSpec::duration(
                "softirq_per_packet",
                nic::DEFAULT_SOFTIRQ_PER_PACKET,
                "Guest softirq work per received frame (NAPI poll, IP, TCP/UDP). Assumed.",
            )
            .at_least(0.0),
            ParamSpec::duration("copy_per_kib", nic::DEFAULT_COPY_PER_KIB, "Guest work per KiB copied to user space by recv. Assumed.")
                .at_least(0.0),
        ]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        if threads == 0 {
            return Err("iperf needs at least its server thread (threads >= 1)".into());
        }
        let protocol = match params.choice("protocol") {
            "udp" => Protocol::Udp { rate_bps: (params.float("udp_mbps") * 1e6).round().max(1.0) as u64 },
            _ => Protocol::Tcp,
        };
        let mut nic = NicSpec::iperf(protocol);
        nic.rcvbuf = params.int("rcvbuf");
        nic.latency = params.duration("latency");
        nic.irq_vcpu = u32::try_from(params.int("irq_vcpu")).map_err(|_| "irq_vcpu is too large".to_string())?;
        nic.hardirq = params.duration("hardirq");
        nic.softirq_per_packet = params.duration("softirq_per_packet");
        nic.copy_per_kib = params.duration("copy_per_kib");
        let len = match protocol {
            Protocol::Tcp => TCP_READ_LEN,
            Protocol::Udp { .. } => nic::IPERF_UDP_LEN,
        };
        let mut program = Program::new(PROGRESS_UNIT);
        program.nic = Some(nic);
        program.threads.push(vec![Op::Loop { count: None, body: vec![Op::SockRecv { len }, Op::Progress] }]);
        for _ in 1..threads {
            program.threads.push(vec![Op::Loop { count: None, body: vec![Op::Compute(Dist::Const(HOG_CHUNK))] }]);
        }
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn thread_0_receives_and_the_others_compute() {
        let program = build_valid(&Iperf, 2, &Params::defaults(&Iperf.params()));
        assert_eq!(loop_body(&program.threads[0]), [Op::SockRecv { len: TCP_READ_LEN }, Op::Progress]);
        assert_eq!(loop_body(&program.threads[1]), [Op::Compute(Dist::Const(MS))]);
        let nic = program.nic.expect("iperf has a device");
        assert_eq!((nic.protocol, nic.rcvbuf), (Protocol::Tcp, 87_380));
        assert_defaults_parse(&Iperf);
    }

    #[test]
    fn udp_reads_one_datagram_at_the_rate_given() {
        let params = params_with(&Iperf, &[("protocol", "udp".into()), ("udp_mbps", 2.0.into())]);
        let program = build_valid(&Iperf, 1, &params);
        assert_eq!(loop_body(&program.threads[0])[0], Op::SockRecv { len: 1470 });
        assert_eq!(program.nic.unwrap().protocol, Protocol::Udp { rate_bps: 2_000_000 });
        assert!(Iperf.build(0, &params).is_err());
    }
}

//! A VM's network device and the link behind it, as plain data (seed 002 section 3.2 and
//! Figure 9: iPerf over "a 1Gbit network environment between the server and client").
//!
//! The device is the receive side of a point-to-point Ethernet link from a remote iperf client
//! (the peer, outside the host). `sim/mechanisms/net_device.rs` runs it: the peer's sender (a TCP stream
//! limited by the window the guest advertises, or paced UDP datagrams), the frames'
//! serialization at the link rate and their propagation, and at each frame's arrival the
//! physical IRQ that the hypervisor relays to the VM's designated vCPU as a virtual IRQ
//! (`vmexit::Upcall::DeviceIrq`). The guest's side (hard IRQ, softirq, socket, ACKs) is
//! `guest/netrx.rs`. This file holds the numbers and the arithmetic both use, with sources.

use crate::time::{Nanos, SEC, US};

/// The seed's network: 1 Gbit/s Ethernet (section 3.3, Table 4c; Figure 9).
pub const LINK_RATE_BPS: u64 = 1_000_000_000;
/// Ethernet MTU: the largest IP packet in one frame.
pub const MTU: u32 = 1500;
/// Bytes each Ethernet frame costs on the wire beyond its IP packet (IEEE 802.3): 14 header,
/// 4 FCS, 8 preamble and start delimiter, 12 inter-frame gap.
pub const ETH_WIRE_OVERHEAD: u32 = 38;
/// IPv4 (20) + TCP (20) + the timestamp option (12, on by default in Linux:
/// `net.ipv4.tcp_timestamps = 1`): MSS = 1500 - 52 = 1448 bytes of payload per segment.
pub const TCP_IP_HEADERS: u32 = 52;
/// IPv4 (20) + UDP (8).
pub const UDP_IP_HEADERS: u32 = 28;
/// A bare ACK is a minimum Ethernet frame: 64 bytes plus preamble and gap (84 on the wire).
pub const ACK_WIRE_BYTES: u32 = 84;
/// iperf 2's UDP datagram payload (`-l` default for UDP: 1470 bytes, src/Settings.cpp
/// `kDefault_UDPBufLen`).
pub const IPERF_UDP_LEN: u32 = 1470;
/// The receive buffer Linux 4.4 gives a TCP socket (`sysctl_tcp_rmem[1] = 87380`,
/// net/ipv4/tcp.c `tcp_init`; iperf 2 prints it as "TCP window size: 85.3 KByte (default)").
pub const TCP_RMEM_DEFAULT: u64 = 87_380;

/// What the device's peer sends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Protocol {
    /// One TCP stream of MSS-sized segments, as many in flight as the receiver's advertised
    /// window allows (`iperf -c`): the congestion window is taken as open (no loss on a
    /// point-to-point link, no slow start after the first RTT).
    Tcp,
    /// UDP datagrams of `IPERF_UDP_LEN` bytes paced at `rate_bps` (`iperf -u -b`): the server
    /// measures jitter (RFC 1889) from their send timestamps.
    Udp { rate_bps: u64 },
}

/// A VM's network device: the link, the peer's protocol and the guest's costs of receiving.
#[derive(Clone, Debug, PartialEq)]
pub struct NicSpec {
    pub protocol: Protocol,
    /// Link rate in bits per second.
    pub rate_bps: u64,
    /// One-way latency from the end of a frame's serialization to its virtual IRQ being set
    /// pending (propagation, the NIC, Xen's relay), and from an ACK's send to the peer.
    pub latency: Nanos,
    /// The guest's TCP receive buffer (the most it advertises).
    pub rcvbuf: u64,
    /// The VM's vCPU (index in the VM) that the device's event channel is bound to.
    pub irq_vcpu: u32,
    /// Guest work of the hard IRQ (irq_enter .. the netfront handler .. napi_schedule).
    pub hardirq: Nanos,
    /// Guest softirq work per received frame (the NAPI poll, IP and TCP/UDP receive).
    pub softirq_per_packet: Nanos,
    /// Guest work to copy one KiB to user space in recv().
    pub copy_per_kib: Nanos,
}

impl NicSpec {
    /// Payload bytes per frame.
    pub fn payload(&self) -> u32 {
        match self.protocol {
            Protocol::Tcp => MTU - TCP_IP_HEADERS,
            Protocol::Udp { .. } => IPERF_UDP_LEN,
        }
    }

    /// Bytes one data frame occupies on the wire.
    pub fn wire_bytes(&self) -> u32 {
        match self.protocol {
            Protocol::Tcp => MTU + ETH_WIRE_OVERHEAD,
            Protocol::Udp { .. } => IPERF_UDP_LEN + UDP_IP_HEADERS + ETH_WIRE_OVERHEAD,
        }
    }

    /// Time to serialize `bytes` on the link (rounded up to the nanosecond).
    pub fn serialize(&self, bytes: u32) -> Nanos {
        (u64::from(bytes) * 8 * SEC).div_ceil(self.rate_bps)
    }

    /// The payload rate the link allows a saturating TCP stream: the link rate times the share
    /// of each frame that is payload (MSS / wire bytes), in Mbit/s (10^6 bits). For 1 Gbit/s
    /// Ethernet with timestamps, 1448 / 1538 -> 941.5 Mbit/s (the seed's solo iPerf: 936.3).
    pub fn link_goodput_mbps(&self) -> f64 {
        self.rate_bps as f64 * f64::from(self.payload()) / f64::from(self.wire_bytes()) / 1e6
    }

    /// The time between two paced UDP datagrams (`None` for TCP).
    pub fn udp_interval(&self) -> Option<Nanos> {
        match self.protocol {
            Protocol::Udp { rate_bps } => Some((u64::from(IPERF_UDP_LEN) * 8 * SEC).div_ceil(rate_bps.max(1))),
            Protocol::Tcp => None,
        }
    }

    /// The device of the seed's iPerf runs with the protocol given and the assumed costs.
    pub fn iperf(protocol: Protocol) -> Self {
        NicSpec {
            protocol,
            rate_bps: LINK_RATE_BPS,
            latency: DEFAULT_LATENCY,
            rcvbuf: TCP_RMEM_DEFAULT,
            irq_vcpu: 0,
            hardirq: DEFAULT_HARDIRQ,
            softirq_per_packet: DEFAULT_SOFTIRQ_PER_PACKET,
            copy_per_kib: DEFAULT_COPY_PER_KIB,
        }
    }
}

/// Assumed: 20 us one way (a switch, the NIC and Xen's relay; the seed gives no latency).
pub const DEFAULT_LATENCY: Nanos = 20 * US;
/// Assumed: 2 us of hard-IRQ work (the seed gives none).
pub const DEFAULT_HARDIRQ: Nanos = 2 * US;
/// Assumed: 3 us of softirq work per frame (the seed gives none; well under the 12.3 us a
/// full frame takes on a 1 Gbit/s link, so one vCPU keeps up with the link alone, as the seed's
/// solo run does at 936 Mbit/s).
pub const DEFAULT_SOFTIRQ_PER_PACKET: Nanos = 3 * US;
/// Assumed: 250 ns per KiB copied to user space (about 4 GB/s).
pub const DEFAULT_COPY_PER_KIB: Nanos = 250;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_tcp_frame_takes_12_3_us_and_the_link_carries_941_mbit_of_payload() {
        let nic = NicSpec::iperf(Protocol::Tcp);
        assert_eq!(nic.payload(), 1448);
        assert_eq!(nic.serialize(nic.wire_bytes()), 12_304);
        assert!((nic.link_goodput_mbps() - 941.48).abs() < 0.01, "{}", nic.link_goodput_mbps());
    }

    #[test]
    fn udp_at_one_megabit_sends_a_datagram_every_11_76_ms() {
        let nic = NicSpec::iperf(Protocol::Udp { rate_bps: 1_000_000 });
        assert_eq!(nic.udp_interval(), Some(11_760_000));
        assert_eq!(NicSpec::iperf(Protocol::Tcp).udp_interval(), None);
    }
}

//! Network devices: an engine-level source of physical IRQs (seed 002 section 3.2, Figure 2).
//!
//! A VM whose program has a network device (`Program::nic`, `hardware/nic.rs`) gets one here. The
//! device is the receive end of a 1 Gbit/s link from a remote iperf client, the peer. The peer
//! sends TCP segments while the window the guest last advertised allows (or UDP datagrams at
//! its paced rate). Each frame is serialized at the link rate, one after the other, and arrives
//! after the link's latency (`Event::NicRx`). Its arrival is a physical IRQ that Xen relays to
//! the VM's designated vCPU (`device_irq`), as Xen 4.7 does for a guest's interrupt:
//! `send_guest_pirq` -> `evtchn_port_set_pending(d, chn->notify_vcpu_id, ..)` ->
//! `evtchn_2l_set_pending` (the port's pending bit, in shared memory: the guest's
//! `GuestKernel::device_irq`) -> `vcpu_mark_events_pending` -> (an HVM guest with a callback
//! vector) `hvm_assert_evtchn_irq` -> `vcpu_kick` -> `vcpu_unblock` -> `vcpu_wake`
//! (xen/common/event_channel.c, event_2l.c, arch/x86/domain.c, arch/x86/hvm/irq.c,
//! common/schedule.c).
//! `vcpu_unblock` wakes only a blocked vCPU, so the policy's `wake` (Credit's
//! `csched_vcpu_wake`, whose BOOST is for a vCPU that was not on a run queue) runs for a vCPU
//! halted in its idle loop and never for one that is runnable but preempted: that one takes
//! the interrupt when it next runs (seed 002 section 4.1: the mixed CPU + I/O vCPU is not
//! boosted). A running vCPU takes it at once.
//!
//! The guest answers with ACKs (`Exit::NetTx`, netfront's transmit notify), which cross the link
//! back to the peer (`Event::NicAck`) and open its window.

use super::super::state::{Activity, Event, Sim, TimeKind};
use super::MechanismEvent;
use crate::hardware::nic::{NicSpec, Protocol, ACK_WIRE_BYTES};
use crate::hypervisor::policy::VcpuState;
use crate::ids::VcpuId;
use crate::metrics::table::MetricRows;
use crate::time::Nanos;
use crate::vmexit::{Packet, Upcall, Virq};
use std::collections::VecDeque;
use std::fmt::Write;

/// One VM's network device, its link and its remote sender.
#[derive(Clone, Debug)]
pub struct NetDevice {
    pub spec: NicSpec,
    /// The vCPU its event channel is bound to (`notify_vcpu_id`).
    pub vcpu: VcpuId,
    /// Frames on the wire towards the NIC, in arrival order (one `NicRx` event each).
    on_wire: VecDeque<Packet>,
    /// ACKs on their way to the peer, in order (one `NicAck` event each): (acked, window).
    acks: VecDeque<(u64, u64)>,
    /// TCP sender: next byte to send, and the right edge of the window the receiver offered.
    snd_nxt: u64,
    peer_edge: u64,
    /// When the link is free for the next frame.
    link_free_at: Nanos,
    /// UDP sender: datagrams sent.
    udp_sent: u64,
    /// Frames that reached the NIC, and the virtual IRQs raised for them (a frame arriving with
    /// the event channel still pending raises none).
    pub frames: u64,
    pub virqs: u64,
}

impl NetDevice {
    pub fn new(spec: NicSpec, vcpu: VcpuId) -> Self {
        let peer_edge = spec.rcvbuf;
        NetDevice {
            spec,
            vcpu,
            on_wire: VecDeque::new(),
            acks: VecDeque::new(),
            snd_nxt: 0,
            peer_edge,
            link_free_at: 0,
            udp_sent: 0,
            frames: 0,
            virqs: 0,
        }
    }

    /// Put one frame of `bytes` payload on the link no earlier than `now`: when it arrives.
    fn transmit(&mut self, now: Nanos, seq_end: u64, bytes: u32) -> Nanos {
        let start = now.max(self.link_free_at);
        let end = start + self.spec.serialize(self.spec.wire_bytes());
        self.link_free_at = end;
        self.on_wire.push_back(Packet { seq_end, bytes, sent_at: start });
        end + self.spec.latency
    }
}

impl Sim {
    /// Start every device's sender (from `Sim::start`).
    pub(in crate::sim) fn start_devices(&mut self) {
        for d in 0..self.mechanisms.net_devices.len() {
            match self.mechanisms.net_devices[d].spec.protocol {
                Protocol::Tcp => self.tcp_send(d),
                Protocol::Udp { .. } => {
                    self.queue.push(self.now, Event::Mechanism(MechanismEvent::NicSend(d as u32)));
                }
            }
        }
    }

    /// The peer's TCP sender: send full segments while the offered window has room for one.
    fn tcp_send(&mut self, d: usize) {
        let now = self.now;
        let dev = &mut self.mechanisms.net_devices[d];
        let mss = u64::from(dev.spec.payload());
        while dev.snd_nxt + mss <= dev.peer_edge {
            dev.snd_nxt += mss;
            let at = dev.transmit(now, dev.snd_nxt, mss as u32);
            self.queue.push(at, Event::Mechanism(MechanismEvent::NicRx(d as u32)));
        }
    }

    /// `Event::NicSend`: the peer's UDP sender sends its next datagram and paces the one after.
    pub(in crate::sim) fn on_nic_send(&mut self, d: u32) {
        let now = self.now;
        let dev = &mut self.mechanisms.net_devices[d as usize];
        dev.udp_sent += 1;
        let len = dev.spec.payload();
        let at = dev.transmit(now, dev.udp_sent, len);
        let interval = dev.spec.udp_interval().expect("only a UDP device paces its sender");
        self.queue.push(at, Event::Mechanism(MechanismEvent::NicRx(d)));
        self.queue.push(now.saturating_add(interval), Event::Mechanism(MechanismEvent::NicSend(d)));
    }

    /// `Event::NicRx`: a frame reached the NIC; the hypervisor relays its IRQ to the VM.
    pub(in crate::sim) fn on_nic_rx(&mut self, d: u32) {
        let dev = &mut self.mechanisms.net_devices[d as usize];
        let packet = dev.on_wire.pop_front().expect("a NicRx event has its frame on the wire");
        dev.frames += 1;
        let v = dev.vcpu;
        self.upcall(v, Upcall::DeviceIrq(Virq { device: d, packet }));
    }

    /// `Upcall::DeviceIrq`: the frame goes into the ring and the event channel is set pending on
    /// `v`; if it was not pending already, the vCPU is kicked: a running one takes the interrupt
    /// now (if it executes thread code; else when its handler or exit ends), a halted one is
    /// woken (policy `wake`), a runnable one takes it when it next runs (no policy call).
    pub(in crate::sim) fn device_irq(&mut self, v: VcpuId, virq: Virq) {
        let (vm, i) = self.gslot(v);
        if !self.guests.kernel_mut(vm).device_irq(i, virq) {
            return;
        }
        self.mechanisms.net_devices[virq.device as usize].virqs += 1;
        // Seed 002's vIRQ detection, at each relay that raises a virtual IRQ and before the kick
        // (section 4.2: "the hypervisor migrates the recipient vCPU onto the micro-sliced
        // cores"; a runnable recipient is accelerated, which the match below then leaves alone).
        self.virq_relayed(v);
        match self.vinfo[v.idx()].state {
            VcpuState::Running => {
                if self.vcpus[v.idx()].activity == Activity::Thread {
                    self.settle(v);
                    self.dispatch(v);
                } else if self.vcpus[v.idx()].activity == Activity::HaltPoll {
                    self.halt_poll_wake(v);
                }
            }
            VcpuState::Halted => {
                self.vinfo[v.idx()].pending_interrupt = true;
                self.wake_vcpu(v, None)
            }
            VcpuState::Runnable => self.vinfo[v.idx()].pending_interrupt = true,
        }
    }

    /// The device handler phase running on `v` ended (`Activity::Irq` of a device interrupt):
    /// the guest's next phase, its ACK and the reader's reschedule IPI.
    pub(in crate::sim) fn device_handler_done(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        let (guest, mut env) = self.guest_env(vm);
        let step = guest.device_handler_done(&mut env, i);
        if let Some(work) = step.next_work {
            // Held by the host, as any handler's remaining work (a deschedule keeps it).
            self.vcpus[v.idx()].remaining = work;
        }
        if let Some(exit) = step.ack {
            self.on_exit(v, exit);
        }
        if let Some(u) = step.resched {
            // try_to_wake_up from the softirq: the IPI is sent from interrupt context.
            self.send_resched_ipi(v, u);
        }
        if self.vinfo[v.idx()].state != VcpuState::Running {
            return;
        }
        match step.next_work {
            Some(work) => self.start_timed(v, Activity::Irq, TimeKind::Irq, work),
            None => self.upcall(v, Upcall::Resume),
        }
    }

    /// `Exit::NetTx`: the guest transmits an ACK; it reaches the peer after its serialization
    /// and the link's latency.
    pub(in crate::sim) fn net_tx(&mut self, d: u32, acked: u64, window: u64) {
        let now = self.now;
        let dev = &mut self.mechanisms.net_devices[d as usize];
        dev.acks.push_back((acked, window));
        let at = now + dev.spec.serialize(ACK_WIRE_BYTES) + dev.spec.latency;
        self.queue.push(at, Event::Mechanism(MechanismEvent::NicAck(d)));
    }

    /// `Event::NicAck`: the peer learns the new window edge and sends what it allows.
    pub(in crate::sim) fn on_nic_ack(&mut self, d: u32) {
        let dev = &mut self.mechanisms.net_devices[d as usize];
        let (acked, window) = dev.acks.pop_front().expect("a NicAck event has its ACK");
        dev.peer_edge = dev.peer_edge.max(acked + window);
        self.tcp_send(d as usize);
    }
}

/// Columns vms.csv gains when the run has a network device (seed 002's iperf: `sim/mechanisms/net_device.rs`),
/// after `VM_COLUMNS`: what recv returned in Mbit/s, and UDP's jitter (iperf's RFC 1889
/// estimate) in ms; empty for a VM without a device, and jitter empty for TCP. Runs without a
/// device keep the table they had.
pub const NET_COLUMNS: &[&str] = &["throughput_mbps", "jitter_ms"];

impl Sim {
    /// VM `i`'s [`NET_COLUMNS`] cells (each after a comma): empty for a VM without a device.
    pub(in crate::sim) fn net_vm_cells(&self, i: usize, out: &mut String) {
        let stack = self.guests[i].net.as_deref();
        let sim_time = self.now.max(1);
        let throughput = stack.map(|n| format!("{:.3}", n.throughput_mbps(sim_time))).unwrap_or_default();
        let jitter = stack.and_then(|n| n.jitter_ms()).map(|j| format!("{j:.4}")).unwrap_or_default();
        write!(out, ",{throughput},{jitter}").expect("writing to a String cannot fail");
    }

    /// VM `i`'s metrics.csv rows (guest/netrx.rs): frames received, the virtual IRQs relayed for
    /// them, ACKs sent, bytes recv returned. None for a VM without a device.
    pub(in crate::sim) fn net_metrics(&self, i: usize, rows: &mut MetricRows) {
        if let Some(n) = self.guests[i].net.as_deref() {
            let dev = &self.mechanisms.net_devices[n.device as usize];
            rows.put("net_frames", dev.frames);
            rows.put("net_virqs", dev.virqs);
            rows.put("net_acks", n.acks);
            rows.put("net_bytes_read", n.bytes_read);
        }
    }
}

//! The guest's receive path for a network device (seed 002 section 3.2, Figure 2): the hard IRQ,
//! the softirq that runs the protocol, the socket a reader sleeps on, and the ACKs, as a Linux
//! 4.4 guest with Xen's netfront runs them.
//!
//! 1. The host puts a frame in the VM's receive ring and sets the device's event channel pending
//!    on its designated vCPU (`device_irq`, `vmexit::Upcall::DeviceIrq`; the host kicks the vCPU
//!    only when the pending bit was newly set, as `evtchn_2l_set_pending` does).
//! 2. The vCPU takes the interrupt before thread code (`take_device_irq`, from `run`): the hard
//!    IRQ (`KernelFn::IrqEnter`: `xen_evtchn_do_upcall` -> `handle_irq_event` ->
//!    `xennet_rx_interrupt` -> `napi_schedule`), `DevIrq::Hard`.
//! 3. On its way out (`irq_exit` -> `invoke_softirq` -> `__do_softirq` -> `net_rx_action`,
//!    `KernelFn::IrqExit`) the NAPI poll (`xennet_poll`, at most `NAPI_POLL_WEIGHT` frames a
//!    round) runs IP and TCP/UDP receive for the frames in the ring, `DevIrq::Soft`; at its end
//!    (`device_handler_done`) the data is in the socket, TCP acknowledges it (one ACK per
//!    poll: GRO merges a poll's in-order segments and `tcp_ack_snd_check` acks the merged
//!    segment at once, as it covers more than one full-sized segment), and the reader asleep in
//!    `sk_wait_data` is woken (`sock_def_readable` -> `try_to_wake_up`; a reschedule IPI if it
//!    is placed on another vCPU, sent from interrupt context).
//! 4. The reader's `recv` (`Op::SockRecv`, `sock_recv`) copies up to its buffer of the stream (TCP,
//!    `tcp_recvmsg`) or one datagram (UDP, `udp_recvmsg`), and sleeps when there is nothing.
//!    After copying, TCP sends a window update when the window it can now offer is at least
//!    twice what the peer may still send and that was at most half the buffer
//!    (`tcp_cleanup_rbuf`).
//!
//! The window the guest advertises is the free receive buffer (`rcvbuf` - unread), never less
//! than what it offered before (`tcp_select_window` does not shrink the window). Departures:
//! docs/model.md § seed 002: interrupt-driven I/O.

use super::kernel::{GuestEnv, GuestKernel};
use super::thread::{Action, FutexKey, Step};
use crate::hardware::nic::{NicSpec, Protocol};
use crate::ids::{ThreadId, VcpuId};
use crate::time::Nanos;
use crate::vmexit::{Exit, KernelFn, Next, Packet, Virq};
use std::collections::VecDeque;

/// `NAPI_POLL_WEIGHT` (include/linux/netdevice.h, Linux 4.4): the frames one NAPI poll takes.
pub const NAPI_POLL_WEIGHT: usize = 64;

/// The phase of a device interrupt a vCPU is in (`GuestVcpu::dev_irq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevIrq {
    /// The hard IRQ handler.
    Hard,
    /// The softirq's NAPI poll of `frames` frames taken from the ring at its start.
    Soft { frames: u32 },
}

impl DevIrq {
    /// The kernel function a vCPU in this phase is in.
    pub fn func(self) -> KernelFn {
        match self {
            DevIrq::Hard => KernelFn::IrqEnter,
            DevIrq::Soft { .. } => KernelFn::IrqExit,
        }
    }
}

/// What the end of a device handler phase asks of the host (`device_handler_done`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevIrqStep {
    /// Work of the next phase (the softirq after the hard IRQ, or another poll round): the
    /// host runs it as interrupt work; `None` when the vCPU returns from the interrupt.
    pub next_work: Option<Nanos>,
    /// A TCP ACK to transmit (`Exit::NetTx`).
    pub ack: Option<Exit>,
    /// The vCPU the woken reader was placed on, when it is another one (a reschedule IPI).
    pub resched: Option<VcpuId>,
}

/// The VM's network stack for its one device: the receive ring, the socket, TCP's receive
/// state, and what iperf's server reports (bytes read, UDP jitter).
#[derive(Clone, Debug)]
pub struct NetStack {
    /// The host's index of the device (`Exit::NetTx`).
    pub device: u32,
    pub nic: NicSpec,
    /// Frames the backend put in the ring and the NAPI poll has not taken.
    pub ring: VecDeque<Packet>,
    /// TCP: in-order bytes in the socket not yet read (`sk_receive_queue`).
    pub unread: u64,
    /// UDP: datagrams in the socket.
    pub datagrams: VecDeque<Packet>,
    /// TCP: the next byte expected (`rcv_nxt`).
    pub rcv_nxt: u64,
    /// TCP: the right edge of the window last advertised (`rcv_wup + rcv_wnd`).
    pub adv_edge: u64,
    /// The thread asleep in `sk_wait_data`.
    pub reader: Option<ThreadId>,
    /// Bytes `recv` returned to the application.
    pub bytes_read: u64,
    /// Frames the softirq received.
    pub frames: u64,
    /// ACKs sent (after a poll or as window updates).
    pub acks: u64,
    /// UDP: iperf's jitter estimate (RFC 1889, ns) and the last transit time.
    pub jitter_ns: f64,
    pub last_transit: Option<i64>,
    /// UDP: datagrams read.
    pub datagrams_read: u64,
}

impl NetStack {
    pub fn new(device: u32, nic: NicSpec) -> Self {
        let adv_edge = nic.rcvbuf;
        NetStack {
            device,
            nic,
            ring: VecDeque::new(),
            unread: 0,
            datagrams: VecDeque::new(),
            rcv_nxt: 0,
            adv_edge,
            reader: None,
            bytes_read: 0,
            frames: 0,
            acks: 0,
            jitter_ns: 0.0,
            last_transit: None,
            datagrams_read: 0,
        }
    }

    /// TCP's window to advertise now: the free buffer, never shrinking the right edge offered
    /// before (`tcp_select_window`).
    fn window(&self) -> u64 {
        let free = self.nic.rcvbuf.saturating_sub(self.unread);
        free.max(self.adv_edge.saturating_sub(self.rcv_nxt))
    }

    /// An ACK of everything received, with the window; records the new right edge.
    fn ack(&mut self) -> Exit {
        let window = self.window();
        self.adv_edge = self.rcv_nxt + window;
        self.acks += 1;
        Exit::NetTx { device: self.device, acked: self.rcv_nxt, window }
    }

    /// iperf 2's jitter (src/Reporter.c `reporter_handle_packet`, from RFC 1889 A.8):
    /// `transit = arrival - sent; jitter += (|transit - last_transit| - jitter) / 16`.
    fn record_transit(&mut self, transit: i64) {
        if let Some(last) = self.last_transit {
            let d = (transit - last).unsigned_abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    /// Throughput of what `recv` returned over `elapsed`, in Mbit/s (10^6 bits).
    pub fn throughput_mbps(&self, elapsed: Nanos) -> f64 {
        self.bytes_read as f64 * 8.0 * 1e3 / elapsed.max(1) as f64
    }

    /// UDP jitter in ms (`None` for TCP, for which iperf reports none).
    pub fn jitter_ms(&self) -> Option<f64> {
        matches!(self.nic.protocol, Protocol::Udp { .. }).then_some(self.jitter_ns / 1e6)
    }
}

impl GuestKernel {
    /// `Upcall::DeviceIrq`: the frame is in the ring; the device's event channel becomes pending
    /// on vCPU `i`. Returns whether its pending bit was newly set (only then does the
    /// hypervisor kick the vCPU: `evtchn_2l_set_pending`'s `test_and_set_bit`).
    pub fn device_irq(&mut self, i: usize, virq: Virq) -> bool {
        let Some(net) = self.net.as_mut() else { return false };
        net.ring.push_back(virq.packet);
        let gv = &mut self.vcpus[i];
        !std::mem::replace(&mut gv.virq_pending, true)
    }

    /// Whether vCPU `i` is inside a device handler (the host ends its interrupt work with
    /// `device_handler_done` rather than the IPI handler's EOI).
    #[inline]
    pub fn in_device_irq(&self, i: usize) -> bool {
        self.vcpus[i].dev_irq.is_some()
    }

    /// Take a pending device interrupt on vCPU `i` (from `run`, after pending IPIs): the
    /// upcall clears the pending bit and runs the hard IRQ handler.
    /// (The test is inlined into `run`, which calls this on every entry.)
    #[inline(always)]
    pub(super) fn take_device_irq(&mut self, i: usize) -> Option<Next> {
        if !self.vcpus[i].virq_pending {
            return None;
        }
        self.take_pending_device_irq(i)
    }

    // Out of the interpreter's hot loop (a VM with a NIC only): docs/speed.md.
    #[inline(never)]
    fn take_pending_device_irq(&mut self, i: usize) -> Option<Next> {
        let gv = &mut self.vcpus[i];
        gv.virq_pending = false;
        let nic = &self.net.as_ref()?.nic;
        gv.dev_irq = Some(DevIrq::Hard);
        gv.func = KernelFn::IrqEnter;
        Some(Next::Handler { work: nic.hardirq })
    }

    /// Start a NAPI poll round on vCPU `i` over the frames now in the ring: its work.
    fn start_poll(&mut self, i: usize) -> Nanos {
        let net = self.net.as_ref().expect("a device handler has its stack");
        let frames = net.ring.len().min(NAPI_POLL_WEIGHT);
        let work = net.nic.softirq_per_packet * frames as u64;
        self.vcpus[i].dev_irq = Some(DevIrq::Soft { frames: frames as u32 });
        self.vcpus[i].func = KernelFn::IrqExit;
        work
    }

    /// The phase of the device handler the host ran on vCPU `i` ended. After the hard IRQ, the
    /// softirq's poll starts; after a poll, its frames are delivered to the socket (TCP acks
    /// them), the reader is woken, and another round starts if frames are left in the ring.
    pub fn device_handler_done(&mut self, env: &mut GuestEnv, i: usize) -> DevIrqStep {
        let phase = self.vcpus[i].dev_irq.expect("in a device handler");
        let mut step = DevIrqStep::default();
        let frames = match phase {
            DevIrq::Hard => {
                step.next_work = Some(self.start_poll(i));
                return step;
            }
            DevIrq::Soft { frames } => frames,
        };
        let net = self.net.as_mut().expect("a device handler has its stack");
        for _ in 0..frames {
            let p = net.ring.pop_front().expect("the poll's frames are in the ring");
            net.frames += 1;
            match net.nic.protocol {
                Protocol::Tcp => {
                    net.rcv_nxt = net.rcv_nxt.max(p.seq_end);
                    net.unread += u64::from(p.bytes);
                }
                Protocol::Udp { .. } => net.datagrams.push_back(p),
            }
        }
        if frames > 0 && net.nic.protocol == Protocol::Tcp {
            step.ack = Some(net.ack());
        }
        let reader = if frames > 0 { net.reader.take() } else { None };
        let more = !net.ring.is_empty();
        if let Some(t) = reader {
            let v = self.vcpus[i].id;
            step.resched = self.wake_thread(env.threads, env.pv, env.now, v, t);
            if step.resched.is_none() {
                self.wakeup_preempt(env.threads, i, t);
            }
        }
        if more {
            step.next_work = Some(self.start_poll(i));
        } else {
            self.vcpus[i].dev_irq = None;
        }
        step
    }

    /// The reader `t`, just woken onto vCPU `i` itself, preempts the thread the interrupt
    /// interrupted if that one is at a preemptible point (user code, no spinlock held): Linux
    /// 4.4's `check_preempt_wakeup` preempts when the woken task's vruntime is more than
    /// `wakeup_gran` (1 ms x (1 + log2 ncpus)) behind the current one's, and a task that slept
    /// is placed `sysctl_sched_latency / 2` (3 ms x (1 + log2 ncpus)) behind `min_vruntime`
    /// (`place_entity` with GENTLE_FAIR_SLEEPERS), so a reader that mostly sleeps preempts a
    /// CPU hog on every wake. The interrupted thread goes first in the queue (it runs next).
    fn wakeup_preempt(&mut self, threads: &mut [super::thread::Thread], i: usize, t: ThreadId) {
        let gv = &mut self.vcpus[i];
        let Some(cur) = gv.current else { return };
        let th = &threads[cur.idx()];
        let user = matches!(th.steps.front(), Some(Step::Run { func: KernelFn::User, .. } | Step::RunDist { func: KernelFn::User, .. }));
        if !user || !th.held.is_empty() {
            return;
        }
        let Some(pos) = gv.runqueue.iter().position(|q| *q == t) else { return };
        gv.runqueue.remove(pos);
        gv.runqueue.push_front(cur);
        gv.current = Some(t);
    }

    /// A thread asleep on the socket will be woken by the device (not a deadlock).
    pub fn net_can_wake(&self) -> bool {
        self.net.as_ref().is_some_and(|n| n.reader.is_some())
    }

    /// `Action::SockRecv` of thread `t` on vCPU `i`: take data if there is some (the syscall and
    /// the copy to user space follow as kernel work), else sleep until the softirq wakes it and
    /// try again.
    // Out of the interpreter's hot loop (a VM with a NIC only): docs/speed.md.
    #[inline(never)]
    pub(super) fn sock_recv(&mut self, env: &mut GuestEnv, i: usize, t: ThreadId, len: u32) -> Option<Next> {
        let now = env.now;
        let net = self.net.as_mut().expect("validated: a recv op has the program's device");
        let got = match net.nic.protocol {
            Protocol::Tcp => {
                let take = net.unread.min(u64::from(len));
                net.unread -= take;
                take
            }
            Protocol::Udp { .. } => match net.datagrams.pop_front() {
                Some(p) => {
                    // iperf's server stamps the datagram when recv returns it.
                    net.record_transit(now as i64 - p.sent_at as i64);
                    net.datagrams_read += 1;
                    u64::from(p.bytes)
                }
                None => 0,
            },
        };
        if got == 0 {
            // sk_wait_data: sleep on the socket, then recv again.
            net.reader = Some(t);
            env.threads[t.idx()].steps.push_front(Step::Do(Action::SockRecv { len }));
            self.block_current(env.threads, i, FutexKey::Socket);
            return None;
        }
        net.bytes_read += got;
        let work = env.costs.syscall + got.div_ceil(1024) * net.nic.copy_per_kib;
        env.threads[t.idx()].steps.push_front(Step::Run { ns: work, func: KernelFn::Syscall });
        if net.nic.protocol == Protocol::Tcp {
            // tcp_cleanup_rbuf: a window update when the window doubled from a small one.
            let now_offered = net.adv_edge.saturating_sub(net.rcv_nxt);
            let new_window = net.nic.rcvbuf.saturating_sub(net.unread);
            if 2 * now_offered <= net.nic.rcvbuf && new_window >= 2 * now_offered {
                return Some(Next::Exit(net.ack()));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack() -> NetStack {
        NetStack::new(0, NicSpec::iperf(Protocol::Tcp))
    }

    #[test]
    fn the_window_is_the_free_buffer_and_never_shrinks() {
        let mut n = stack();
        assert_eq!(n.window(), 87_380);
        n.rcv_nxt = 10_000;
        n.unread = 10_000;
        // Offered up to 87 380 before: 77 380 are still open, as much as the free buffer.
        assert_eq!(n.window(), 77_380);
        let Exit::NetTx { acked, window, .. } = n.ack() else { panic!() };
        assert_eq!((acked, window, n.adv_edge), (10_000, 77_380, 87_380));
        // More arrives unread: the free buffer falls, the edge stays.
        n.rcv_nxt = 20_000;
        n.unread = 20_000;
        assert_eq!(n.window(), 67_380);
        n.unread = 80_000;
        n.rcv_nxt = 80_000;
        assert_eq!(n.window(), 7_380);
    }

    #[test]
    fn jitter_follows_rfc_1889() {
        let mut n = NetStack::new(0, NicSpec::iperf(Protocol::Udp { rate_bps: 1_000_000 }));
        n.record_transit(100);
        assert_eq!(n.jitter_ns, 0.0);
        n.record_transit(1700);
        assert_eq!(n.jitter_ns, 100.0);
        n.record_transit(1700);
        assert_eq!(n.jitter_ns, 93.75);
        assert_eq!(n.jitter_ms(), Some(93.75 / 1e6));
        assert_eq!(stack().jitter_ms(), None);
    }
}

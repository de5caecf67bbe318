//! Admission at RX: `--rx-rate` (a token bucket) and `--on-full drop`'s
//! hold-then-drop rule. Both decide, per burst and never per packet, how
//! much a stage may take or must give up; both read the TSC only when they
//! have something to decide. Pure integer arithmetic on TSC values passed
//! in, so they are tested without EAL.

use crate::config::cli::OnFull;

/// Fixed-point scale of the token bucket's credit (credit is TSC cycles ×
/// `SCALE`, so a cost of 2.4 cycles per packet at 1000 Mpps stays exact
/// to 0.1 %).
const SCALE: u64 = 1024;

/// `--rx-rate`: at most `rate` packets per second taken from the ports.
///
/// Credit accrues with the TSC and is spent per packet received. It models
/// a source sending at that rate into the NIC: credit is capped at what the
/// NIC's RX rings polled by this stage hold (descriptors × queues, at least
/// one burst), so after a pause of the lcore the stage catches up by at
/// most a ring's worth, as it would on a real port, and a longer pause
/// loses input as a real port's `imissed` would. The excess is never
/// received, which is what makes this a load knob for benchmarks and not a
/// shaper.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    /// TSC cycles per packet × `SCALE`.
    cost: u64,
    /// Earned and not yet spent, TSC cycles × `SCALE`; ≤ `cap`.
    credit: u64,
    cap: u64,
    /// TSC of the last refill; 0 = not started.
    last: u64,
}

impl TokenBucket {
    /// `pps` packets per second on a TSC of `tsc_hz`; at most `ring`
    /// packets (but one `burst` at least) wait to be taken.
    pub fn new(pps: f64, tsc_hz: u64, ring: usize, burst: usize) -> Self {
        let cost = ((tsc_hz as f64 * SCALE as f64 / pps).round() as u64).max(1);
        let cap = cost.saturating_mul(ring.max(burst) as u64);
        TokenBucket {
            cost,
            credit: 0,
            cap,
            last: 0,
        }
    }

    /// Packets that may be received now (TSC `now`); the caller then calls
    /// [`spend`](Self::spend) with what it took.
    #[inline]
    pub fn allowance(&mut self, now: u64) -> usize {
        if self.last == 0 {
            self.last = now;
        }
        let elapsed = now.wrapping_sub(self.last);
        self.last = now;
        // Clamp before scaling: a long pause only fills the bucket.
        let earned = elapsed.min(self.cap / SCALE + 1).saturating_mul(SCALE);
        self.credit = (self.credit + earned).min(self.cap);
        (self.credit / self.cost) as usize
    }

    /// Takes `n` packets' worth of credit (n ≤ the last allowance).
    #[inline]
    pub fn spend(&mut self, n: usize) {
        self.credit = self.credit.saturating_sub(n as u64 * self.cost);
    }
}

/// What a producer does with packets its consumer (a hand-off queue or a
/// port's TX queue) refuses: `--on-full` and `--drop-after`.
#[derive(Debug, Clone, Copy)]
pub struct FullPolicy {
    /// `--on-full wait`: never drop for lack of room; hold and stop
    /// taking input until the consumer takes them.
    pub wait: bool,
    /// `--on-full drop`: TSC cycles refused packets are held (the producer
    /// taking no input meanwhile, so the excess stays upstream and finally
    /// in the NIC) before their consumer counts as stalled. 0 = drop at once.
    pub patience: u64,
}

impl FullPolicy {
    pub fn new(on_full: OnFull, drop_after_us: u64, tsc_hz: u64) -> Self {
        FullPolicy {
            wait: on_full == OnFull::Wait,
            patience: (drop_after_us as u128 * tsc_hz as u128 / 1_000_000) as u64,
        }
    }
}

/// Hold state of one output (one worker's queue, one TX lcore's queue, one
/// port) under `--on-full drop`.
///
/// A consumer that is merely saturated takes something within
/// microseconds, so holding its producer back costs nothing but input left
/// in the NIC. One that has taken nothing for longer than the patience is
/// *stalled*: from then on its packets are dropped (counted) as soon as it
/// refuses, so it no longer holds up the producer's other outputs (no
/// head-of-line blocking), until it takes something again.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hold {
    /// TSC of the first refusal since the output last took something;
    /// 0 = not refusing.
    since: u64,
    /// Refusals since the TSC was last read: under overload a producer
    /// meets a full queue on nearly every poll, and a TSC read costs more
    /// than the poll (about 45 cycles in a VM), so the patience is checked
    /// on every [`CHECK_EVERY`]th refusal only.
    unchecked: u32,
    stalled: bool,
}

/// Refusals between two TSC reads of a [`Hold`] (a poll that is refused
/// takes well under a microsecond, so the patience is overrun by at most
/// tens of microseconds).
pub const CHECK_EVERY: u32 = 32;

impl Hold {
    /// The output refused packets (TSC `now()`, read only when needed):
    /// true = drop them now, false = keep them and retry later.
    #[inline]
    pub fn refused(&mut self, policy: FullPolicy, now: impl FnOnce() -> u64) -> bool {
        if policy.wait {
            return false;
        }
        if self.stalled || policy.patience == 0 {
            return true;
        }
        if self.since != 0 {
            self.unchecked += 1;
            if self.unchecked < CHECK_EVERY {
                return false;
            }
        }
        self.unchecked = 0;
        let now = now().max(1);
        if self.since == 0 {
            self.since = now;
            return false;
        }
        if now.wrapping_sub(self.since) >= policy.patience {
            self.stalled = true;
            self.since = 0;
            return true;
        }
        false
    }

    /// The output took something (call before [`refused`](Self::refused)
    /// for the rest, if any).
    #[inline]
    pub fn took(&mut self) {
        self.since = 0;
        self.unchecked = 0;
        self.stalled = false;
    }

    pub fn is_stalled(&self) -> bool {
        self.stalled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_honours_the_rate() {
        // 2 Mpps on a 2.4 GHz TSC: 1200 cycles per packet.
        let hz = 2_400_000_000;
        let mut b = TokenBucket::new(2e6, hz, 2048, 32);
        let mut now = 1_000;
        let mut taken = 0usize;
        assert_eq!(b.allowance(now), 0, "no credit before time passes");
        // Poll every 1000 cycles for one second, taking everything allowed.
        for _ in 0..(hz / 1000) {
            now += 1000;
            let a = b.allowance(now);
            b.spend(a);
            taken += a;
        }
        assert!((taken as i64 - 2_000_000).abs() <= 1, "{taken}");
    }

    #[test]
    fn bucket_caps_catch_up_after_a_pause() {
        let hz = 2_400_000_000;
        let mut b = TokenBucket::new(10e6, hz, 2048, 32);
        b.allowance(1);
        // A 50 ms pause earns at most what the rings hold.
        let a = b.allowance(1 + hz / 20);
        assert_eq!(a, 2048);
        b.spend(a);
        assert_eq!(b.allowance(1 + hz / 20), 0);
    }

    #[test]
    fn bucket_partial_spend_keeps_the_rest() {
        let mut b = TokenBucket::new(1e6, 1_000_000_000, 2048, 32);
        b.allowance(1);
        assert_eq!(b.allowance(1 + 10_000), 10);
        b.spend(4);
        assert_eq!(b.allowance(1 + 10_000), 6);
    }

    #[test]
    fn wait_never_drops() {
        let p = FullPolicy {
            wait: true,
            patience: 10,
        };
        let mut h = Hold::default();
        for t in 1..1000 {
            assert!(!h.refused(p, || t * 1000));
        }
    }

    /// Refuses `CHECK_EVERY - 1` times without a TSC read, then once
    /// reading `now`.
    fn refuse_round(h: &mut Hold, p: FullPolicy, now: u64) -> bool {
        for _ in 1..CHECK_EVERY {
            assert!(!h.refused(p, || unreachable!("TSC read between checks")));
        }
        h.refused(p, || now)
    }

    #[test]
    fn drop_holds_for_the_patience_then_stalls() {
        let p = FullPolicy {
            wait: false,
            patience: 100,
        };
        let mut h = Hold::default();
        assert!(!h.refused(p, || 1000), "first refusal starts the clock");
        assert!(!refuse_round(&mut h, p, 1050));
        assert!(refuse_round(&mut h, p, 1100), "patience spent");
        assert!(h.is_stalled());
        // Stalled: refused packets go at once, no TSC read.
        assert!(h.refused(p, || unreachable!()));
        // Taking something ends the stall; the next refusal waits again.
        h.took();
        assert!(!h.is_stalled());
        assert!(!h.refused(p, || 5000));
        assert!(!refuse_round(&mut h, p, 5099));
        // A refusal after progress restarts the clock.
        h.took();
        assert!(!h.refused(p, || 5200));
        assert!(!refuse_round(&mut h, p, 5250));
        assert!(refuse_round(&mut h, p, 5300));
    }

    #[test]
    fn zero_patience_drops_at_once() {
        let p = FullPolicy::new(OnFull::Drop, 0, 2_400_000_000);
        assert_eq!(p.patience, 0);
        assert!(Hold::default().refused(p, || unreachable!()));
        assert_eq!(
            FullPolicy::new(OnFull::Drop, 1000, 2_400_000_000).patience,
            2_400_000
        );
    }
}

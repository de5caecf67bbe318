//! Inspection from any thread ([`Probe`]): how many items a queue holds,
//! read from the counts its producers and consumer keep anyway.
//!
//! Promise: a probe only loads; it writes nothing the data path reads.

use core::fmt;

use super::shared::Shared;
use super::sync::{Arc, Ordering};

/// How full a queue is, read from any thread (monitoring): per producer,
/// the items it published minus the items the consumer returned, counts
/// the two sides keep anyway (see *Counts: one store per unit* in the
/// module doc). A handle like the others: the queue's memory lives until
/// the last of its producers, consumer and probes is dropped.
pub struct Probe<T> {
    pub(super) shared: Arc<Shared<T>>,
}

impl<T> fmt::Debug for Probe<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Probe")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl<T> Probe<T> {
    /// Items in the queue: published and in units not yet returned (as for
    /// the budget, a partly read unit counts whole until its last item is
    /// read). A snapshot, at most [`capacity`](Self::capacity).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tqfwd::queue::{self, GlobalMemory};
    ///
    /// let (mut txs, mut rx) = queue::channel::<u64>(2, 64, 8, Arc::new(GlobalMemory))?;
    /// let probe = rx.probe(); // may move to a monitoring thread
    /// assert_eq!((probe.len(), probe.capacity()), (0, 64));
    /// txs[0].send_slice(&[1; 8]);
    /// txs[1].send_slice(&[2; 3]);
    /// assert_eq!(probe.len(), 11);
    /// let mut out = [0; 16];
    /// while rx.recv_slice(&mut out) > 0 {}
    /// assert!(probe.is_empty());
    /// # Ok::<(), tqfwd::queue::QueueError>(())
    /// ```
    pub fn len(&self) -> usize {
        let budget = self.shared.budget;
        self.shared
            .pools
            .iter()
            .map(|p| {
                // Acquire: every unit counted returned was published, with
                // its `published` store, before this load; so the load
                // below reads at least as many items (never "negative").
                let gone = (p.returned.load(Ordering::Acquire) >> 32) as u32;
                let published = p.published.load(Ordering::Relaxed);
                // More than the budget only when the producer published
                // again between the two loads.
                (published.wrapping_sub(gone) as usize).min(budget)
            })
            .sum()
    }

    /// True when [`len`](Self::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Items the queue holds at most: the producers' budgets summed
    /// ([`items_per_producer`](super::items_per_producer) each).
    pub fn capacity(&self) -> usize {
        self.shared.budget * self.shared.pools.len()
    }
}

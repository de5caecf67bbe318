//! Building a queue: the limits on its sizes ([`MAX_BURST`],
//! [`MAX_ARENA_BYTES`]), why a build is refused ([`QueueError`]), and
//! [`channel`] and [`sharded`], which allocate every arena once and hand
//! out the producers and the consumer.
//!
//! Promise: a queue is built whole or not at all (what was allocated
//! before a failure is freed), and the sizes it accepts keep unit indices
//! and item counts within `u32`.

use core::fmt;
use core::marker::PhantomData;
use core::ptr;

use crossbeam_utils::CachePadded;

use super::burst::Plain;
use super::consumer::{Consumer, ShardedConsumer};
use super::producer::Producer;
use super::shared::{Pool, Shared, UnitMemory};
use super::sync::{Arc, AtomicPtr, AtomicU32, AtomicU64};
use super::unit::{items_per_producer, unit_stride, units_per_producer, Geometry, Unit};

/// Largest `burst` (items per transfer unit) accepted by [`channel`].
pub const MAX_BURST: usize = 256;

/// Largest arena (one producer's transfer units) [`channel`] builds: 1 GiB.
/// A bigger one is a mistaken `depth`/`burst`, not a queue anyone needs.
pub const MAX_ARENA_BYTES: usize = 1 << 30;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Why [`channel`] could not build a queue.
#[derive(Debug)]
pub enum QueueError {
    /// `burst` is 0 or above [`MAX_BURST`].
    BadBurst(usize),
    /// `depth` is not a power of two (0 included).
    BadDepth(usize),
    /// `producers` is 0.
    NoProducers,
    /// One producer's arena would exceed [`MAX_ARENA_BYTES`]: `bytes` for
    /// `depth` items (split over the producers) at `burst` slots per unit.
    TooLarge {
        depth: usize,
        burst: usize,
        bytes: usize,
    },
    /// The [`UnitMemory`] could not provide the arenas (`bytes` in all).
    OutOfMemory { bytes: usize },
}

impl fmt::Display for QueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueError::BadBurst(b) => write!(
                f,
                "transfer-queue burst {b} is out of range: use 1..={MAX_BURST} items per transfer unit"
            ),
            QueueError::BadDepth(d) => write!(
                f,
                "transfer-queue depth {d} is not a power of two: use a power of two >= 1 (e.g. 4096)"
            ),
            QueueError::NoProducers => {
                write!(f, "a transfer queue needs at least one producer: pass producers >= 1")
            }
            QueueError::TooLarge {
                depth,
                burst,
                bytes,
            } => write!(
                f,
                "transfer-queue depth {depth} at burst {burst} needs {bytes} bytes of transfer \
                 units per producer, above the {MAX_ARENA_BYTES}-byte limit: lower the depth or \
                 the burst (each producer has depth/producers units of burst item slots)"
            ),
            QueueError::OutOfMemory { bytes } => write!(
                f,
                "could not allocate {bytes} bytes of transfer units: lower the depth or burst, \
                 or give the memory provider more memory (e.g. more hugepages on that NUMA node)"
            ),
        }
    }
}

impl std::error::Error for QueueError {}

// ---------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------

/// Builds a TransferQueue with `producers` producers and one consumer.
///
/// `depth` is the capacity in items (a power of two >= 1), split across the
/// producers: each may have [`items_per_producer`]`(producers, depth)` items
/// in the queue, whatever the sizes of its sends, in as many units of
/// `burst` item slots (1..=[`MAX_BURST`]). Arenas come from `mem`; one
/// above [`MAX_ARENA_BYTES`] is refused ([`QueueError::TooLarge`]).
///
/// The shared form: every producer publishes to the one consumer's list.
///
/// ```
/// use std::sync::Arc;
/// use tqfwd::queue::{self, GlobalMemory};
///
/// // Two producers, 1024 items in all (512 each), units of 32 items.
/// let (mut txs, mut rx) = queue::channel::<u64>(2, 1024, 32, Arc::new(GlobalMemory))?;
/// assert_eq!(rx.producers(), 2);
/// let mut tx1 = txs.pop().unwrap();
/// let handle = std::thread::spawn(move || tx1.send_slice(&[10, 11, 12]));
/// assert_eq!(txs[0].send_slice(&[1, 2, 3]), 3);
/// assert_eq!(handle.join().unwrap(), 3);
///
/// let mut got = Vec::new();
/// while got.len() < 6 {
///     rx.recv(usize::MAX, |item| got.push(item));
/// }
/// got.sort();
/// assert_eq!(got, [1, 2, 3, 10, 11, 12]);
///
/// // A depth that is not a power of two is refused.
/// assert!(queue::channel::<u64>(1, 1000, 32, Arc::new(GlobalMemory)).is_err());
/// # Ok::<(), tqfwd::queue::QueueError>(())
/// ```
pub fn channel<T: Send>(
    producers: usize,
    depth: usize,
    burst: usize,
    mem: std::sync::Arc<dyn UnitMemory>,
) -> Result<(Vec<Producer<T>>, Consumer<T>), QueueError> {
    let budget = check::<T>(producers, depth, burst)?;
    build(producers, budget, burst, mem, false)
}

/// Builds a **round-trip** TransferQueue (*Round trip* in the module doc):
/// as [`channel`], but the consumer works on the items in place
/// ([`Consumer::recv_with`]; what it says it consumed is *processed*, not
/// gone) and every unit goes back to its producer with its items, which
/// the producer takes back in publish order
/// ([`Producer::take_back_with`]). A producer's budget counts its items
/// until it has taken them back, so `depth` bounds the whole trip.
///
/// ```
/// use std::sync::Arc;
/// use tqfwd::queue::{self, GlobalMemory};
///
/// let (mut txs, mut rx) = queue::round_trip::<u64>(1, 64, 8, Arc::new(GlobalMemory))?;
/// let tx = &mut txs[0];
/// assert_eq!(tx.send_slice(&[1, 2, 3, 4]), 4);
///
/// // The consumer works on the items where they lie (here: doubles them).
/// let done = rx.recv_with(8, |items| {
///     items.iter_mut().for_each(|x| *x *= 2);
///     items.len()
/// });
/// assert_eq!(done, 4);
///
/// // The producer takes them back as the consumer left them.
/// let mut back = Vec::new();
/// tx.take_back_with(8, |items| {
///     back.extend_from_slice(items);
///     items.len()
/// });
/// assert_eq!(back, [2, 4, 6, 8]);
/// assert_eq!(tx.outstanding(), 0);
/// # Ok::<(), tqfwd::queue::QueueError>(())
/// ```
pub fn round_trip<T: Plain>(
    producers: usize,
    depth: usize,
    burst: usize,
    mem: std::sync::Arc<dyn UnitMemory>,
) -> Result<(Vec<Producer<T>>, Consumer<T>), QueueError> {
    let budget = check::<T>(producers, depth, burst)?;
    build(producers, budget, burst, mem, true)
}

/// The sharded topology of round-trip queues: [`sharded`], each shard a
/// [`round_trip`] queue.
pub fn round_trip_sharded<T: Plain>(
    producers: usize,
    depth: usize,
    burst: usize,
    mem: std::sync::Arc<dyn UnitMemory>,
) -> Result<(Vec<Producer<T>>, ShardedConsumer<T>), QueueError> {
    shards(producers, depth, burst, mem, true)
}

/// Builds the sharded topology: one single-producer queue per producer, all
/// read by one [`ShardedConsumer`]. Parameters mean the same as for
/// [`channel`] (`depth` is the total capacity, so each shard holds
/// `items_per_producer(producers, depth)` items and the footprint equals the
/// shared-queue one).
///
/// ```
/// use std::sync::Arc;
/// use tqfwd::queue::{self, GlobalMemory};
///
/// // Three producers, each with a single-producer queue of 4096 / 3 items.
/// let (mut txs, mut rx) = queue::sharded::<u64>(3, 4096, 32, Arc::new(GlobalMemory))?;
/// assert_eq!(rx.shards().len(), 3);
/// for (id, tx) in txs.iter_mut().enumerate() {
///     assert_eq!(tx.send_slice(&[id as u64; 5]), 5);
/// }
///
/// // The consumer polls the shards round-robin, FIFO per producer.
/// let mut out = [0u64; 64];
/// let mut n = 0;
/// while n < 15 {
///     n += rx.recv_slice(&mut out[n..]);
/// }
/// assert_eq!(out[..15].iter().sum::<u64>(), 5 * (0 + 1 + 2));
/// assert!(rx.is_empty());
/// # Ok::<(), tqfwd::queue::QueueError>(())
/// ```
pub fn sharded<T: Send>(
    producers: usize,
    depth: usize,
    burst: usize,
    mem: std::sync::Arc<dyn UnitMemory>,
) -> Result<(Vec<Producer<T>>, ShardedConsumer<T>), QueueError> {
    shards(producers, depth, burst, mem, false)
}

fn shards<T: Send>(
    producers: usize,
    depth: usize,
    burst: usize,
    mem: std::sync::Arc<dyn UnitMemory>,
    round_trip: bool,
) -> Result<(Vec<Producer<T>>, ShardedConsumer<T>), QueueError> {
    let budget = check::<T>(producers, depth, burst)?;
    let mut txs = Vec::with_capacity(producers);
    let mut rxs = Vec::with_capacity(producers);
    for _ in 0..producers {
        let (mut tx, rx) = build(1, budget, burst, mem.clone(), round_trip)?;
        txs.push(tx.pop().expect("build returns one producer"));
        rxs.push(rx);
    }
    Ok((txs, ShardedConsumer::new(rxs)))
}

/// Validates the parameters of [`channel`]/[`sharded`]; returns the item
/// budget (and unit count) per producer.
pub(super) fn check<T>(producers: usize, depth: usize, burst: usize) -> Result<usize, QueueError> {
    if burst == 0 || burst > MAX_BURST {
        return Err(QueueError::BadBurst(burst));
    }
    if !depth.is_power_of_two() {
        return Err(QueueError::BadDepth(depth));
    }
    if producers == 0 {
        return Err(QueueError::NoProducers);
    }
    let budget = items_per_producer(producers, depth);
    let bytes = unit_stride::<T>(burst).saturating_mul(units_per_producer(producers, depth, burst));
    if bytes > MAX_ARENA_BYTES {
        return Err(QueueError::TooLarge {
            depth,
            burst,
            bytes,
        });
    }
    Ok(budget)
}

/// Builds a queue whose producers each have `budget` items and as many
/// units (`budget <= MAX_ARENA_BYTES / 64`, checked by `check`, so unit
/// indices and item counts fit in `u32`).
fn build<T: Send>(
    producers: usize,
    budget: usize,
    burst: usize,
    mem: std::sync::Arc<dyn UnitMemory>,
    round_trip: bool,
) -> Result<(Vec<Producer<T>>, Consumer<T>), QueueError> {
    // One producer: one more unit than items (the consumer's last unit,
    // see *Single producer*).
    let single = producers == 1;
    let units = budget + usize::from(single);
    let geo =
        Geometry::new::<T>(units, burst).ok_or(QueueError::OutOfMemory { bytes: usize::MAX })?;
    let total = geo.arena.size().saturating_mul(producers);
    if u32::try_from(producers).is_err() || u32::try_from(units).is_err() {
        return Err(QueueError::OutOfMemory { bytes: total });
    }
    let stub = Box::into_raw(Box::new(Unit::new(u32::MAX)));
    let mut shared = Shared::<T> {
        head: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
        stub,
        single,
        round_trip,
        budget,
        pools: Vec::with_capacity(producers),
        geo,
        mem,
        _items: PhantomData,
    };
    for p in 0..producers {
        // On failure `shared` is dropped, freeing the arenas made so far.
        let arena = shared
            .mem
            .alloc_zeroed(geo.arena)
            .ok_or(QueueError::OutOfMemory { bytes: total })?;
        for i in 0..units {
            // SAFETY: unit `i` lies inside the fresh arena and is aligned for
            // `Unit` (stride and arena alignment are multiples of its align).
            unsafe {
                ptr::write(
                    arena.as_ptr().add(i * geo.stride).cast::<Unit>(),
                    Unit::new(p as u32),
                )
            };
        }
        shared.pools.push(Pool {
            returned: CachePadded::new(AtomicU64::new(0)),
            published: CachePadded::new(AtomicU32::new(0)),
            arena,
        });
    }
    let shared = Arc::new(shared);
    let mut txs = Vec::with_capacity(producers);
    for p in 0..producers {
        txs.push(Producer::new(p as u32, shared.clone()));
    }
    let rx = Consumer::new(shared);
    Ok((txs, rx))
}

//! The TransferQueue's public API as the forwarder sees it (`tqfwd::queue`):
//! the exact names and signatures, an outside `UnitMemory`, both backends
//! behind the burst traits, and a cross-thread run.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use tqfwd::queue::{
    channel, items_per_producer, queue_bytes, sharded, unit_stride, units_per_producer,
    BurstReceiver, BurstSender, Consumer, GlobalMemory, Producer, QueueError, ShardedConsumer,
    UnitMemory, MAX_BURST,
};

/// A packet reference as the forwarder passes it (an mbuf pointer wrapped so
/// it may cross lcores).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pkt(*mut u8);
// SAFETY: test stand-in for an mbuf pointer; never dereferenced.
unsafe impl Send for Pkt {}

/// An outside memory provider, as the DPDK one will be.
#[derive(Default)]
struct Counting {
    live_bytes: AtomicUsize,
}

impl UnitMemory for Counting {
    fn alloc_zeroed(&self, layout: Layout) -> Option<NonNull<u8>> {
        let p = GlobalMemory.alloc_zeroed(layout)?;
        self.live_bytes.fetch_add(layout.size(), Ordering::SeqCst);
        Some(p)
    }
    unsafe fn free(&self, ptr: NonNull<u8>, layout: Layout) {
        self.live_bytes.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: forwarded from our own alloc_zeroed with the same layout.
        unsafe { GlobalMemory.free(ptr, layout) }
    }
}

#[test]
fn signatures_are_the_agreed_ones() {
    type Channel<T> = fn(
        usize,
        usize,
        usize,
        Arc<dyn UnitMemory>,
    ) -> Result<(Vec<Producer<T>>, Consumer<T>), QueueError>;
    let _: Channel<Pkt> = channel::<Pkt>;
    let _: fn(&mut Producer<Pkt>, &[Pkt]) -> usize = Producer::<Pkt>::send_slice;
    let _: fn(&Producer<Pkt>) -> usize = Producer::<Pkt>::free_units;
    let _: fn(&Producer<Pkt>) -> usize = Producer::<Pkt>::units;
    let _: fn(&mut Consumer<Pkt>, &mut [Pkt]) -> usize = Consumer::<Pkt>::recv_slice;
    let _: fn(&Consumer<Pkt>) -> bool = Consumer::<Pkt>::is_empty;
    let _: fn(Vec<Consumer<Pkt>>) -> ShardedConsumer<Pkt> = ShardedConsumer::<Pkt>::new;
    let _: fn(usize, usize, usize) -> usize = units_per_producer;
    let _: fn(usize, usize) -> usize = items_per_producer;
    let _: fn(&Producer<Pkt>) -> usize = Producer::<Pkt>::capacity;
    assert_eq!(MAX_BURST, 256);
    fn send_bounds<X: Send>() {}
    send_bounds::<Producer<Pkt>>();
    send_bounds::<Consumer<Pkt>>();
    send_bounds::<ShardedConsumer<Pkt>>();
    send_bounds::<Box<dyn BurstSender<Pkt>>>();
    send_bounds::<Box<dyn BurstReceiver<Pkt>>>();
    let e: Box<dyn std::error::Error + Send + Sync> = Box::new(QueueError::BadDepth(3));
    assert!(e.to_string().contains("power of two"));
}

#[test]
fn outside_memory_provider_gets_everything_back() {
    let mem = Arc::new(Counting::default());
    let (mut txs, mut rx) = channel::<Pkt>(2, 1024, 32, mem.clone()).unwrap();
    assert_eq!(
        mem.live_bytes.load(Ordering::SeqCst),
        queue_bytes::<Pkt>(2, 1024, 32)
    );
    // 512 items per producer, in as many units of 32 slots
    assert_eq!(
        queue_bytes::<Pkt>(2, 1024, 32),
        2 * 512 * unit_stride::<Pkt>(32)
    );
    assert_eq!(txs[1].capacity(), 512);
    let pkts: Vec<Pkt> = (1..=40usize).map(|i| Pkt(i as *mut u8)).collect();
    assert_eq!(txs[1].send_slice(&pkts), 40);
    let mut out = [Pkt(std::ptr::null_mut()); 64];
    assert_eq!(rx.recv_slice(&mut out), 40);
    assert_eq!(&out[..40], &pkts[..]);
    drop(txs);
    drop(rx);
    assert_eq!(mem.live_bytes.load(Ordering::SeqCst), 0);
}

fn run_backend(
    txs: Vec<Box<dyn BurstSender<Pkt>>>,
    mut rx: Box<dyn BurstReceiver<Pkt>>,
    per: usize,
) {
    let producers = txs.len();
    let handles: Vec<_> = txs
        .into_iter()
        .enumerate()
        .map(|(p, mut tx)| {
            thread::spawn(move || {
                // packet "address" encodes (producer, seq)
                let mut seq = 0usize;
                let mut burst = Vec::with_capacity(32);
                while seq < per {
                    burst.clear();
                    burst.extend((seq..per.min(seq + 32)).map(|s| Pkt((s * 8 + p + 1) as *mut u8)));
                    let n = tx.send_burst(&burst);
                    seq += n;
                    if n == 0 {
                        thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let mut next = vec![0usize; producers];
    let mut got = 0;
    let mut out = [Pkt(std::ptr::null_mut()); 32];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while got < producers * per {
        let n = rx.recv_burst(&mut out);
        for pkt in &out[..n] {
            let v = pkt.0 as usize;
            let (p, s) = (v % 8 - 1, v / 8);
            assert_eq!(s, next[p], "producer {p} out of order");
            next[p] += 1;
        }
        got += n;
        if n == 0 {
            assert!(std::time::Instant::now() < deadline, "stalled at {got}");
            thread::yield_now();
        }
    }
    for h in handles {
        h.join().unwrap();
    }
    assert!(rx.is_empty());
}

#[test]
fn both_topologies_behind_the_burst_traits() {
    let per = 50_000;
    let (txs, rx) = channel::<Pkt>(3, 256, 32, Arc::new(GlobalMemory)).unwrap();
    run_backend(
        txs.into_iter()
            .map(|t| Box::new(t) as Box<dyn BurstSender<Pkt>>)
            .collect(),
        Box::new(rx),
        per,
    );
    let (txs, rx) = sharded::<Pkt>(3, 256, 32, Arc::new(GlobalMemory)).unwrap();
    run_backend(
        txs.into_iter()
            .map(|t| Box::new(t) as Box<dyn BurstSender<Pkt>>)
            .collect(),
        Box::new(rx),
        per,
    );
}

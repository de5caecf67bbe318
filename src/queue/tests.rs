//! Unit, stress and drop-accounting tests for the TransferQueue (std threads;
//! also run under Miri with reduced counts).

use super::construct::check;
use super::*;
use core::alloc::Layout;
use core::ptr::NonNull;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering as O};
use std::sync::{Arc as StdArc, Mutex};
use std::thread;

/// Fails a spinning test instead of hanging it when nothing moves for 30 s
/// (e.g. a unit is lost and the queue stays full forever).
struct Watchdog(std::time::Instant);

impl Watchdog {
    fn new() -> Self {
        Watchdog(std::time::Instant::now())
    }
    /// Call with the amount of progress made; panics after 30 s without any.
    fn tick(&mut self, progress: usize, what: &str) {
        if progress > 0 {
            self.0 = std::time::Instant::now();
        } else if self.0.elapsed() > std::time::Duration::from_secs(30) {
            panic!("no progress for 30 s: {what}");
        } else {
            thread::yield_now();
        }
    }
}

fn mem() -> StdArc<dyn UnitMemory> {
    StdArc::new(GlobalMemory)
}

/// Units of `tx`'s pool free once the consumer has read everything: all of
/// them, but with one producer the last unit read (the consumer keeps it
/// until another is linked after it, see *Single producer*).
fn all_back<T: Send>(tx: &Producer<T>) -> usize {
    tx.units() - usize::from(tx.shared.single)
}

fn drain_all<T: Send>(rx: &mut Consumer<T>) -> Vec<T> {
    let mut out = Vec::new();
    while rx.recv(usize::MAX, |x| out.push(x)) > 0 {}
    out
}

/// Memory provider that counts live allocations and bytes, and can be told to
/// fail after a number of allocations.
#[derive(Default)]
struct CountingMemory {
    live: AtomicUsize,
    allocs: AtomicUsize,
    fail_after: Option<usize>,
    layouts: Mutex<HashMap<usize, Layout>>,
}

impl UnitMemory for CountingMemory {
    fn alloc_zeroed(&self, layout: Layout) -> Option<NonNull<u8>> {
        let n = self.allocs.fetch_add(1, O::SeqCst);
        if self.fail_after.is_some_and(|f| n >= f) {
            return None;
        }
        let p = GlobalMemory.alloc_zeroed(layout)?;
        // zeroed, as promised
        // SAFETY: fresh allocation of layout.size() bytes.
        let bytes = unsafe { core::slice::from_raw_parts(p.as_ptr(), layout.size()) };
        assert!(bytes.iter().all(|&b| b == 0));
        assert_eq!(p.as_ptr() as usize % layout.align(), 0);
        self.layouts
            .lock()
            .unwrap()
            .insert(p.as_ptr() as usize, layout);
        self.live.fetch_add(1, O::SeqCst);
        Some(p)
    }
    unsafe fn free(&self, ptr: NonNull<u8>, layout: Layout) {
        let l = self
            .layouts
            .lock()
            .unwrap()
            .remove(&(ptr.as_ptr() as usize));
        assert_eq!(l, Some(layout), "free of unknown pointer or wrong layout");
        self.live.fetch_sub(1, O::SeqCst);
        // SAFETY: came from GlobalMemory.alloc_zeroed(layout).
        unsafe { GlobalMemory.free(ptr, layout) }
    }
}

// ---------------------------------------------------------------- basics ----

#[test]
fn single_producer_fifo() {
    let (mut txs, mut rx) = channel::<u32>(1, 64, 4, mem()).unwrap();
    let tx = &mut txs[0];
    assert!(rx.is_empty());
    assert_eq!(rx.recv(10, |_| panic!("nothing to receive")), 0);
    let items: Vec<u32> = (0..30).collect();
    assert_eq!(tx.send(&mut items.iter().copied()), 30);
    assert!(!rx.is_empty());
    assert_eq!(drain_all(&mut rx), items);
    assert!(rx.is_empty());
    // Interleaved sends and receives keep order.
    let mut next_in = 0u32;
    let mut next_out = 0u32;
    for round in 0..50u32 {
        let k = round % 7 + 1;
        let sent = tx.send(&mut (next_in..next_in + k));
        next_in += sent as u32;
        rx.recv((round % 5) as usize, |x| {
            assert_eq!(x, next_out);
            next_out += 1;
        });
    }
    rx.recv(usize::MAX, |x| {
        assert_eq!(x, next_out);
        next_out += 1;
    });
    assert_eq!(next_out, next_in);
}

#[test]
fn burst_split_across_recv_calls() {
    let (mut txs, mut rx) = channel::<u64>(1, 64, 8, mem()).unwrap();
    assert_eq!(txs[0].send_slice(&(0..8).collect::<Vec<u64>>()), 8); // exactly one unit
    let mut got = Vec::new();
    assert_eq!(rx.recv(3, |x| got.push(x)), 3);
    assert_eq!(got, [0, 1, 2]);
    // the partially read unit is still owned by the consumer
    assert_eq!(txs[0].free_units(), txs[0].units() - 1);
    assert!(!rx.is_empty());
    let mut out = [0u64; 4];
    assert_eq!(rx.recv_slice(&mut out), 4);
    assert_eq!(out, [3, 4, 5, 6]);
    assert_eq!(rx.recv(1, |x| got.push(x)), 1);
    assert_eq!(got, [0, 1, 2, 7]);
    // unit handed back as soon as its last item left
    assert_eq!(txs[0].free_units(), all_back(&txs[0]));
    assert!(rx.is_empty());
    assert_eq!(rx.recv_slice(&mut out), 0);
}

#[test]
fn recv_spans_several_units_and_max_zero() {
    let (mut txs, mut rx) = channel::<u16>(1, 64, 3, mem()).unwrap();
    assert_eq!(txs[0].send_slice(&[1, 2, 3, 4, 5, 6, 7]), 7); // units 3+3+1
    assert_eq!(rx.recv(0, |_| unreachable!()), 0);
    let mut out = [0u16; 5];
    assert_eq!(rx.recv_slice(&mut out), 5);
    assert_eq!(out, [1, 2, 3, 4, 5]);
    assert_eq!(rx.recv_slice(&mut out), 2);
    assert_eq!(&out[..2], &[6, 7]);
}

#[test]
fn full_queue_hands_items_back() {
    // depth 8, burst 2, 1 producer -> 8 items, in 8 + 1 units of 2 slots.
    let (mut txs, mut rx) = channel::<String>(1, 8, 2, mem()).unwrap();
    let tx = &mut txs[0];
    assert_eq!(tx.capacity(), 8);
    assert_eq!(tx.units(), 9);
    let mut it = (0..11).map(|i| i.to_string());
    assert_eq!(tx.send(&mut it), 8);
    // The rest were not pulled: still in the iterator, intact.
    assert_eq!(it.collect::<Vec<_>>(), ["8", "9", "10"]);
    // Full by items (4 full units out), not by units.
    assert_eq!(tx.free_units(), 5);
    assert_eq!(tx.send(&mut std::iter::once("x".to_string())), 0);

    // send_slice accepts a prefix.
    let (mut txs2, mut rx2) = channel::<u8>(1, 4, 2, mem()).unwrap();
    let items = [1u8, 2, 3, 4, 5, 6];
    assert_eq!(txs2[0].send_slice(&items), 4);
    assert_eq!(txs2[0].send_slice(&items[4..]), 0);
    let mut out = [0u8; 8];
    assert_eq!(rx2.recv_slice(&mut out), 4);
    assert_eq!(&out[..4], &items[..4]);
    assert_eq!(txs2[0].send_slice(&items[4..]), 2);
    assert_eq!(rx2.recv_slice(&mut out), 2);
    assert_eq!(&out[..2], &[5, 6]);

    // Freeing one unit makes room for exactly one more burst.
    let mut got = Vec::new();
    assert_eq!(rx.recv(2, |x| got.push(x)), 2);
    assert_eq!(got, ["0", "1"]);
    let mut it = ["a", "b", "c"].into_iter().map(String::from);
    assert_eq!(tx.send(&mut it), 2);
    assert_eq!(it.next().as_deref(), Some("c"));
    let rest = drain_all(&mut rx);
    assert_eq!(rest, ["2", "3", "4", "5", "6", "7", "a", "b"]);
}

#[test]
fn partial_unit_then_exhausted_iterator_keeps_unit() {
    let (mut txs, mut rx) = channel::<u32>(1, 16, 4, mem()).unwrap();
    let tx = &mut txs[0];
    let units = tx.units();
    assert_eq!(tx.send(&mut std::iter::empty()), 0);
    assert_eq!(tx.free_units(), units); // unit taken and put back
    assert_eq!(tx.send(&mut (0..4)), 4); // exactly one unit; the probe for more puts one back
    assert_eq!(tx.free_units(), units - 1);
    assert_eq!(tx.send(&mut (4..5)), 1);
    assert_eq!(tx.free_units(), units - 2);
    assert_eq!(drain_all(&mut rx), [0, 1, 2, 3, 4]);
    assert_eq!(tx.free_units(), all_back(tx));
}

#[test]
fn unit_return_and_reuse_many_cycles() {
    let (mut txs, mut rx) = channel::<u64>(1, 4, 2, mem()).unwrap();
    let tx = &mut txs[0];
    assert_eq!(tx.capacity(), 4);
    let cycles = if cfg!(miri) { 200 } else { 20_000 };
    let mut next_in = 0u64;
    let mut next_out = 0u64;
    for c in 0..cycles {
        // fill up completely, then drain a varying amount
        next_in += tx.send(&mut (next_in..)) as u64;
        assert_eq!(tx.send_slice(&[0]), 0, "full");
        // a partially read unit stays with the consumer (and its read item
        // in the producer's count): 3 or 4 items inside
        let inside = next_in - next_out;
        assert!(inside == 4 || inside == 3, "{inside} inside");
        let want = c % 4 + 1;
        rx.recv(want, |x| {
            assert_eq!(x, next_out);
            next_out += 1;
        });
    }
    rx.recv(usize::MAX, |x| {
        assert_eq!(x, next_out);
        next_out += 1;
    });
    assert_eq!(next_in, next_out);
    assert_eq!(tx.free_units(), all_back(tx));
}

// ------------------------------------------------- depth counts items ----

/// Sends with `send_slice` in sizes cycling through `sizes` until one is
/// refused whole, then single items until none fits; returns the items
/// taken and the size of every send that took something (in order).
fn fill_with(tx: &mut Producer<u32>, sizes: &[usize], next: &mut u32) -> (usize, Vec<usize>) {
    let mut taken = 0;
    let mut sends = Vec::new();
    let mut buf = Vec::new();
    for &k in sizes.iter().cycle() {
        buf.clear();
        buf.extend(*next..*next + k as u32);
        let n = tx.send_slice(&buf);
        *next += n as u32;
        taken += n;
        if n > 0 {
            sends.push(n);
        }
        if n < k {
            break;
        }
    }
    loop {
        let n = tx.send(&mut std::iter::once(*next));
        if n == 0 {
            break;
        }
        *next += 1;
        taken += 1;
        sends.push(1);
    }
    (taken, sends)
}

#[test]
fn depth_holds_items_whatever_the_send_sizes() {
    for sizes in [&[1usize][..], &[1, 3, 32, 7], &[5, 64, 2, 33, 1, 31, 100]] {
        let (mut txs, mut rx) = channel::<u32>(1, 2048, 32, mem()).unwrap();
        let tx = &mut txs[0];
        let mut next = 0;
        let (taken, sends) = fill_with(tx, sizes, &mut next);
        assert_eq!(taken, 2048, "sizes {sizes:?}");
        assert_eq!(tx.send(&mut std::iter::once(0)), 0);

        // Receive the items of the first few sends (whole units): exactly
        // that many more fit, no more.
        let k: usize = sends[..sends.len() / 3].iter().sum();
        let mut expect = 0u32;
        let mut check = |x: u32| {
            assert_eq!(x, expect);
            expect += 1;
        };
        assert_eq!(rx.recv(k, &mut check), k);
        let (more, _) = fill_with(tx, &[7, 1], &mut next);
        assert_eq!(more, k, "sizes {sizes:?}");

        // A partly read unit frees nothing until its last item is read.
        let first = sends[sends.len() / 3];
        if first > 1 {
            assert_eq!(rx.recv(1, &mut check), 1);
            assert_eq!(tx.send_slice(&[0]), 0);
            assert_eq!(rx.recv(first.min(32) - 1, &mut check), first.min(32) - 1);
            assert_eq!(tx.send_slice(&[next]), 1);
            next += 1;
        }
        rx.recv(usize::MAX, &mut check);
        assert_eq!(expect, next);
        assert_eq!(tx.free_units(), all_back(tx));
        assert_eq!(fill_with(tx, &[3], &mut next).0, 2048);
    }
}

#[test]
fn depth_is_split_over_producers() {
    for p in [2usize, 3] {
        let (mut txs, _rx) = channel::<u32>(p, 2048, 32, mem()).unwrap();
        for tx in txs.iter_mut() {
            assert_eq!(fill_with(tx, &[1], &mut 0).0, 2048 / p);
        }
        let (mut txs, _rx) = sharded::<u32>(p, 2048, 32, mem()).unwrap();
        for tx in txs.iter_mut() {
            assert_eq!(fill_with(tx, &[3, 32], &mut 0).0, 2048 / p);
        }
    }
}

/// Units whose header was ever written (`count` is 0 in a fresh, zeroed
/// arena and at least 1 in every unit ever published).
fn units_touched<T: Send>(tx: &Producer<T>) -> usize {
    (0..tx.units())
        .filter(|&i| {
            let unit = tx.shared.unit(tx.id(), i);
            // SAFETY: a unit of the arena; single-threaded test with nothing
            // in flight, so no one writes the header concurrently.
            unsafe { (*unit).count != 0 }
        })
        .count()
}

#[test]
fn reuse_keeps_touched_units_bounded() {
    let cycles = if cfg!(miri) { 300 } else { 10_000 };
    // (depth, burst, send size) -> the pool a full-burst stream needs,
    // `max(1, depth / burst)` units, is all that is touched, not the
    // `depth` units of the pool.
    for (depth, burst, k, bound) in [
        (2048, 32, 32, 64),
        (2048, 32, 1, 64),
        (2048, 32, 3, 64),
        (64, 32, 32, 2),
        (64, 32, 1, 2),
    ] {
        let (mut txs, mut rx) = channel::<u32>(1, depth, burst, mem()).unwrap();
        let tx = &mut txs[0];
        let items: Vec<u32> = (0..k as u32).collect();
        let mut out = vec![0u32; k];
        for _ in 0..cycles {
            assert_eq!(tx.send_slice(&items), k);
            assert_eq!(rx.recv_slice(&mut out), k);
            assert_eq!(out, items);
        }
        let touched = units_touched(tx);
        assert!(
            touched <= bound,
            "depth {depth} burst {burst} sends of {k}: {touched} units touched, want <= {bound}"
        );
        assert_eq!(tx.free_units(), all_back(tx));
    }
}

#[test]
fn validation_errors() {
    let e = channel::<u8>(1, 16, 0, mem()).unwrap_err();
    assert!(matches!(e, QueueError::BadBurst(0)), "{e:?}");
    let e = channel::<u8>(1, 16, MAX_BURST + 1, mem()).unwrap_err();
    assert!(matches!(e, QueueError::BadBurst(257)), "{e:?}");
    assert!(e.to_string().contains("1..=256"), "{e}");
    assert!(channel::<u8>(1, 1024, MAX_BURST, mem()).is_ok());
    assert!(channel::<u8>(1, 1024, 1, mem()).is_ok());
    for d in [0usize, 3, 6, 1000, 4097] {
        let e = channel::<u8>(1, d, 4, mem()).unwrap_err();
        assert!(matches!(e, QueueError::BadDepth(x) if x == d), "{e:?}");
        assert!(e.to_string().contains("power of two"), "{e}");
    }
    for d in [1usize, 2, 4, 4096] {
        assert!(channel::<u8>(1, d, 4, mem()).is_ok());
    }
    let e = channel::<u8>(0, 16, 4, mem()).unwrap_err();
    assert!(matches!(e, QueueError::NoProducers), "{e:?}");
    assert!(e.to_string().contains("producers >= 1"));
    assert!(matches!(
        sharded::<u8>(0, 16, 4, mem()).unwrap_err(),
        QueueError::NoProducers
    ));
    assert!(matches!(
        sharded::<u8>(2, 15, 4, mem()).unwrap_err(),
        QueueError::BadDepth(15)
    ));
    // Errors are std errors.
    let _: Box<dyn std::error::Error> = Box::new(QueueError::OutOfMemory { bytes: 1 });
}

#[test]
fn out_of_memory_frees_partial_arenas() {
    let cm = StdArc::new(CountingMemory {
        fail_after: Some(2),
        ..Default::default()
    });
    let e = channel::<u64>(3, 1024, 32, cm.clone()).unwrap_err();
    let want = queue_bytes::<u64>(3, 1024, 32);
    assert!(
        matches!(e, QueueError::OutOfMemory { bytes } if bytes == want),
        "{e:?}"
    );
    assert!(e.to_string().contains("bytes"));
    assert_eq!(
        cm.live.load(O::SeqCst),
        0,
        "arenas of earlier producers must be freed"
    );
    assert_eq!(cm.allocs.load(O::SeqCst), 3);
}

#[test]
fn capacity_formula() {
    assert_eq!(items_per_producer(1, 4096), 4096);
    assert_eq!(items_per_producer(4, 16384), 4096);
    assert_eq!(items_per_producer(3, 4096), 1365);
    assert_eq!(items_per_producer(3, 2), 1); // at least one item
    assert_eq!(items_per_producer(0, 8), 8); // zero treated as 1
    for b in [1, 32, 256] {
        // as many units as items, whatever the burst
        assert_eq!(units_per_producer(3, 4096, b), 1365);
    }
    for (p, d, b) in [
        (1, 4096, 32),
        (3, 4096, 32),
        (3, 4, 2),
        (2, 8, 1),
        (5, 1024, 7),
    ] {
        let (txs, _rx) = channel::<u32>(p, d, b, mem()).unwrap();
        assert_eq!(txs.len(), p);
        for tx in &txs {
            assert_eq!(tx.capacity(), items_per_producer(p, d));
            assert_eq!(tx.units(), units_per_producer(p, d, b));
            assert_eq!(tx.free_units(), tx.units());
            assert_eq!(tx.burst(), b);
        }
        // a producer holds exactly its capacity
        let (mut txs, _rx) = channel::<u32>(p, d, b, mem()).unwrap();
        let cap = txs[0].capacity();
        assert_eq!(txs[0].send(&mut (0..).map(|x| x as u32)), cap);
        assert_eq!(txs[0].send_slice(&[0]), 0);
    }
}

#[test]
fn arena_size_limit() {
    // 64-byte units: 2^24 of them are exactly 1 GiB, one more is refused
    // (a queue with one producer has one unit more than its depth).
    assert_eq!(unit_stride::<u8>(1), 64);
    assert_eq!(check::<u8>(2, 1 << 25, 1).unwrap(), 1 << 24); // per producer
    assert_eq!(check::<u8>(1, 1 << 23, 1).unwrap(), 1 << 23);
    let e = check::<u8>(1, 1 << 24, 1).unwrap_err();
    assert!(
        matches!(e, QueueError::TooLarge { depth, burst: 1, bytes }
            if depth == 1 << 24 && bytes == 64 * ((1 << 24) + 1)),
        "{e:?}"
    );
    // Refused before anything is allocated, by channel and sharded alike.
    let cm = StdArc::new(CountingMemory::default());
    let e = channel::<u64>(1, 1 << 22, 256, cm.clone()).unwrap_err();
    assert!(matches!(e, QueueError::TooLarge { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("depth 4194304") && msg.contains("burst 256"),
        "{msg}"
    );
    assert!(msg.contains("lower the depth or"), "{msg}");
    let e = sharded::<u64>(2, 1 << 23, 256, cm.clone()).unwrap_err();
    assert!(matches!(e, QueueError::TooLarge { .. }), "{e:?}");
    assert_eq!(cm.allocs.load(O::SeqCst), 0);
}

#[test]
fn geometry_and_footprint() {
    // 24-byte header + 8-byte pointers.
    assert_eq!(unit_stride::<*mut u8>(5), 64);
    assert_eq!(unit_stride::<*mut u8>(32), 320);
    assert_eq!(unit_stride::<*mut u8>(1), 64);
    assert_eq!(unit_stride::<u8>(40), 64);
    assert_eq!(unit_stride::<u8>(41), 128);
    assert_eq!(queue_bytes::<*mut u8>(4, 16384, 32), 4 * 4096 * 320);
    #[repr(align(128))]
    #[derive(Clone, Copy, PartialEq, Debug)]
    struct Big(u8);
    assert_eq!(unit_stride::<Big>(1), 256);
    let (mut txs, mut rx) = channel::<Big>(1, 4, 2, mem()).unwrap();
    assert_eq!(txs[0].send_slice(&[Big(1), Big(2), Big(3)]), 3);
    let mut out = [Big(0); 3];
    assert_eq!(rx.recv_slice(&mut out), 3);
    assert_eq!(out, [Big(1), Big(2), Big(3)]);
    // zero-sized items
    let (mut txs, mut rx) = channel::<()>(1, 8, 4, mem()).unwrap();
    assert_eq!(txs[0].send(&mut std::iter::repeat(())), 8);
    assert_eq!(rx.recv(100, |()| {}), 8);
}

#[test]
fn arenas_come_from_and_return_to_provider() {
    let cm = StdArc::new(CountingMemory::default());
    {
        let (mut txs, mut rx) = channel::<u64>(3, 64, 4, cm.clone()).unwrap();
        assert_eq!(cm.live.load(O::SeqCst), 3);
        txs[1].send_slice(&[1, 2, 3]);
        let mut out = [0; 1];
        rx.recv_slice(&mut out);
        drop(rx);
        assert_eq!(cm.live.load(O::SeqCst), 3);
        drop(txs);
    }
    assert_eq!(cm.live.load(O::SeqCst), 0);
    let (txs, rx) = sharded::<u64>(2, 64, 4, cm.clone()).unwrap();
    assert_eq!(cm.live.load(O::SeqCst), 2);
    drop(rx);
    drop(txs);
    assert_eq!(cm.live.load(O::SeqCst), 0);
}

#[test]
fn several_producers_fifo_each_single_thread() {
    let (mut txs, mut rx) = channel::<(usize, u32)>(3, 64, 2, mem()).unwrap();
    for round in 0..5u32 {
        for (p, tx) in txs.iter_mut().enumerate() {
            tx.send(&mut (0..3).map(|i| (p, round * 3 + i)));
        }
    }
    let mut next = [0u32; 3];
    let got = rx.recv(usize::MAX, |(p, s)| {
        assert_eq!(s, next[p]);
        next[p] += 1;
    });
    assert_eq!(got, 45);
    assert_eq!(next, [15, 15, 15]);
    for tx in &txs {
        assert_eq!(tx.free_units(), all_back(tx));
        assert_eq!(
            tx.id(),
            txs.iter().position(|t| core::ptr::eq(t, tx)).unwrap()
        );
    }
    assert_eq!(rx.producers(), 3);
}

#[test]
fn traits_switch_backend_by_value() {
    let (txs, rx) = channel::<u32>(1, 16, 4, mem()).unwrap();
    let mut tx: Box<dyn BurstSender<u32>> = Box::new(txs.into_iter().next().unwrap());
    let mut rx: Box<dyn BurstReceiver<u32>> = Box::new(rx);
    assert!(rx.is_empty());
    assert_eq!(tx.send_burst(&[1, 2, 3, 4, 5, 6]), 6);
    assert!(!rx.is_empty());
    let mut out = [0; 10];
    assert_eq!(rx.recv_burst(&mut out), 6);
    assert_eq!(&out[..6], &[1, 2, 3, 4, 5, 6]);

    let (txs, srx) = sharded::<u32>(2, 16, 4, mem()).unwrap();
    let mut txs: Vec<Box<dyn BurstSender<u32>>> = txs
        .into_iter()
        .map(|t| Box::new(t) as Box<dyn BurstSender<u32>>)
        .collect();
    let mut srx: Box<dyn BurstReceiver<u32>> = Box::new(srx);
    assert_eq!(txs[0].send_burst(&[10, 11]), 2);
    assert_eq!(txs[1].send_burst(&[20, 21]), 2);
    assert_eq!(srx.recv_burst(&mut out), 4);
    assert!(srx.is_empty());
}

#[test]
fn handles_are_send() {
    fn is_send<X: Send>() {}
    struct P(#[allow(dead_code)] *mut u8);
    // SAFETY: test marker type, never dereferenced.
    unsafe impl Send for P {}
    is_send::<Producer<P>>();
    is_send::<Consumer<P>>();
    is_send::<ShardedConsumer<P>>();
    is_send::<Producer<std::cell::Cell<u8>>>(); // Send but not Sync items are fine
    is_send::<Consumer<std::cell::Cell<u8>>>();
}

#[test]
fn sharded_round_robin_is_fair_and_fifo() {
    let (mut txs, mut rx) = sharded::<(usize, u32)>(3, 256, 4, mem()).unwrap();
    assert_eq!(rx.shards().len(), 3);
    // Each shard is a one-producer queue of the producer's share.
    assert_eq!(
        txs[0].units(),
        units_per_producer(1, items_per_producer(3, 256), 4)
    );
    for (p, tx) in txs.iter_mut().enumerate() {
        assert_eq!(tx.send(&mut (0..20).map(|i| (p, i))), 20);
    }
    // Each call starts one shard later: with max = 1 the shards alternate.
    let mut first = Vec::new();
    for _ in 0..6 {
        rx.recv(1, |(p, _)| first.push(p));
    }
    assert_eq!(first, [0, 1, 2, 0, 1, 2]);
    let mut next = [2u32, 2, 2];
    let mut out = [(0usize, 0u32); 7];
    loop {
        let n = rx.recv_slice(&mut out);
        if n == 0 {
            break;
        }
        for &(p, s) in &out[..n] {
            assert_eq!(s, next[p]);
            next[p] += 1;
        }
    }
    assert_eq!(next, [20, 20, 20]);
    assert!(rx.is_empty());
    // empty sharded consumer
    let mut none = ShardedConsumer::<u8>::new(Vec::new());
    assert_eq!(none.recv(4, |_| {}), 0);
    assert!(none.is_empty());
}

#[test]
fn sink_panic_loses_nothing() {
    let (mut txs, mut rx) = channel::<String>(1, 16, 4, mem()).unwrap();
    txs[0].send(&mut (0..6).map(|i| i.to_string()));
    let mut got = Vec::new();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rx.recv(10, |s| {
            if s == "2" {
                panic!("sink failed");
            }
            got.push(s);
        })
    }));
    assert!(r.is_err());
    assert_eq!(got, ["0", "1"]); // "2" was handed to the sink (and dropped by it)
    rx.recv(10, |s| got.push(s));
    assert_eq!(got, ["0", "1", "3", "4", "5"]);
    assert_eq!(txs[0].free_units(), all_back(&txs[0]));

    // panic on the last item of a unit: the spent unit is retired later
    txs[0].send(&mut (0..4).map(|i| i.to_string()));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rx.recv(10, |s| assert_ne!(s, "3"))
    }));
    assert!(r.is_err());
    assert!(rx.is_empty());
    assert_eq!(rx.recv(10, |_| unreachable!()), 0);
    assert_eq!(txs[0].free_units(), all_back(&txs[0]));
}

#[test]
fn iterator_panic_publishes_taken_items() {
    let (mut txs, mut rx) = channel::<u32>(1, 16, 4, mem()).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        txs[0].send(&mut (0..10).map(|i| if i == 6 { panic!("source failed") } else { i }))
    }));
    assert!(r.is_err());
    assert_eq!(drain_all(&mut rx), [0, 1, 2, 3, 4, 5]);
    assert_eq!(txs[0].free_units(), all_back(&txs[0]));
    // sequence numbers continue (the consumer checks them in debug builds)
    txs[0].send(&mut (0..3));
    assert_eq!(drain_all(&mut rx), [0, 1, 2]);
}

// --------------------------------------------------------- drop counting ----

/// Item that records its creation and drop; each id may exist at most once.
struct Tracked {
    id: usize,
    log: StdArc<DropLog>,
}

struct DropLog {
    created: Vec<AtomicUsize>,
    dropped: Vec<AtomicUsize>,
}

impl DropLog {
    fn new(n: usize) -> StdArc<DropLog> {
        let v = || (0..n).map(|_| AtomicUsize::new(0)).collect();
        StdArc::new(DropLog {
            created: v(),
            dropped: v(),
        })
    }
    fn make(self: &StdArc<Self>, id: usize) -> Tracked {
        assert_eq!(
            self.created[id].fetch_add(1, O::SeqCst),
            0,
            "item {id} created twice"
        );
        Tracked {
            id,
            log: self.clone(),
        }
    }
    fn created(&self) -> usize {
        self.created.iter().map(|c| c.load(O::SeqCst)).sum()
    }
    fn dropped(&self) -> usize {
        self.dropped.iter().map(|c| c.load(O::SeqCst)).sum()
    }
    /// Every item created was dropped exactly once.
    fn assert_balanced(&self) {
        for i in 0..self.created.len() {
            let (c, d) = (
                self.created[i].load(O::SeqCst),
                self.dropped[i].load(O::SeqCst),
            );
            assert_eq!(c, d, "item {i}: created {c} times, dropped {d} times");
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // Counted only (checked by `assert_balanced`): panicking in a drop
        // that runs during unwinding would abort the test binary.
        self.log.dropped[self.id].fetch_add(1, O::SeqCst);
    }
}

fn tracked(
    log: &StdArc<DropLog>,
    ids: std::ops::Range<usize>,
) -> impl Iterator<Item = Tracked> + '_ {
    ids.map(move |id| log.make(id))
}

#[test]
fn drop_with_items_published_detached_and_partially_read() {
    // Teardown orders: consumer first, then producers; and the reverse.
    for consumer_first in [true, false] {
        let log = DropLog::new(80);
        let cm = StdArc::new(CountingMemory::default());
        let (mut txs, mut rx) = channel::<Tracked>(2, 64, 4, cm.clone()).unwrap();
        assert_eq!(txs[0].capacity(), 32);
        // 0..10 from producer 0 -> units [0..4][4..8][8..10]
        assert_eq!(txs[0].send(&mut tracked(&log, 0..10)), 10);
        // 10..16 from producer 1
        assert_eq!(txs[1].send(&mut tracked(&log, 10..16)), 6);
        // Read 6 items: detaches everything; one unit is left partially read,
        // the ones after it detached but unread.
        let mut seen = Vec::new();
        assert_eq!(rx.recv(6, |t| seen.push(t.id)), 6);
        assert_eq!(log.dropped(), 6); // handed-out items were dropped by the sink
                                      // Published after the detach: still on the head list.
        assert_eq!(txs[1].send(&mut tracked(&log, 16..24)), 8);
        assert_eq!(txs[0].send(&mut tracked(&log, 24..30)), 6);
        assert_eq!(log.created(), 30);
        if consumer_first {
            drop(rx);
            // Everything inside was dropped with the consumer...
            assert_eq!(log.dropped(), 30);
            // ... and its units went back: producers may keep sending into a
            // queue nobody reads, until it is full.
            assert_eq!(txs[0].send(&mut tracked(&log, 30..80)), 32);
            assert_eq!(txs[0].send(&mut tracked(&log, 62..80)), 0);
            assert_eq!(log.created(), 62);
            drop(txs);
        } else {
            // 16 items sent, 4 back (the first unit, read whole): room
            // for 20 (the partly read unit's 2 read items still count).
            assert_eq!(txs[0].send(&mut tracked(&log, 30..80)), 20);
            drop(txs);
            assert_eq!(log.created(), 50);
            assert!(log.dropped() < 50);
            drop(rx);
        }
        log.assert_balanced();
        assert_eq!(cm.live.load(O::SeqCst), 0, "every arena freed");
    }
}

#[test]
fn drop_last_handle_is_producer_with_only_published_items() {
    let log = DropLog::new(16);
    let (mut txs, rx) = channel::<Tracked>(1, 16, 4, mem()).unwrap();
    drop(rx); // nothing inside yet
    assert_eq!(txs[0].send(&mut tracked(&log, 0..16)), 16);
    assert_eq!(log.dropped(), 0);
    drop(txs);
    assert_eq!(log.dropped(), 16);
    log.assert_balanced();
}

#[test]
fn drop_counting_under_threads() {
    use std::sync::atomic::AtomicBool;
    let n = if cfg!(miri) { 200 } else { 20_000 };
    let log = DropLog::new(2 * n);
    let stop = StdArc::new(AtomicBool::new(false));
    let (txs, mut rx) = channel::<Tracked>(2, 16, 4, mem()).unwrap();
    let handles: Vec<_> = txs
        .into_iter()
        .enumerate()
        .map(|(p, mut tx)| {
            let log = log.clone();
            let stop = stop.clone();
            thread::spawn(move || {
                let mut it = tracked(&log, p * n..(p + 1) * n).peekable();
                while it.peek().is_some() {
                    if tx.send(&mut it) == 0 {
                        if stop.load(O::SeqCst) {
                            break; // nobody reads any more
                        }
                        thread::yield_now(); // bounded by the consumer's watchdog
                    }
                }
            })
        })
        .collect();
    // Read about half, then drop the consumer while producers still run.
    let mut got = 0;
    let mut dog = Watchdog::new();
    while got < n {
        let k = rx.recv(7, drop);
        got += k;
        dog.tick(k, "consumer starved");
    }
    drop(rx);
    stop.store(true, O::SeqCst);
    for h in handles {
        h.join().unwrap();
    }
    assert!(log.created() >= n);
    log.assert_balanced();
}

// ----------------------------------------------------------------- stress ----

/// Runs `producers` threads of `per_producer` items `(producer, seq)` into one
/// consumer; checks exactly-once, per-producer FIFO, that every unit is back
/// in its pool at the end, and returns how often a send found the queue full.
fn stress_mpsc(
    producers: usize,
    per_producer: u32,
    depth: usize,
    burst: usize,
    use_slice: bool,
) -> usize {
    let (txs, mut rx) = channel::<(u32, u32)>(producers, depth, burst, mem()).unwrap();
    let handles: Vec<_> = txs
        .into_iter()
        .enumerate()
        .map(|(p, mut tx)| {
            thread::spawn(move || {
                let p = p as u32;
                let mut next = 0u32;
                let mut full = 0usize;
                let mut buf = Vec::with_capacity(burst * 3);
                let mut dog = Watchdog::new();
                while next < per_producer {
                    let (offered, n) = if use_slice {
                        buf.clear();
                        let k = ((next % 3) as usize + 1) * burst - 1;
                        buf.extend((next..per_producer.min(next + k as u32)).map(|s| (p, s)));
                        (buf.len(), tx.send_slice(&buf))
                    } else {
                        let end = per_producer.min(next + (next % 97) + 1);
                        let mut it = (next..end).map(|s| (p, s));
                        let n = tx.send(&mut it);
                        // what was not taken is still in the iterator
                        assert_eq!(
                            it.next(),
                            (next + n as u32 != end).then_some((p, next + n as u32))
                        );
                        ((end - next) as usize, n)
                    };
                    full += usize::from(n < offered);
                    next += n as u32;
                    dog.tick(n, "producer blocked: queue full forever");
                }
                (tx, full)
            })
        })
        .collect();
    let mut next = vec![0u32; producers];
    let total = producers as u64 * per_producer as u64;
    let mut got = 0u64;
    let mut out = vec![(0u32, 0u32); burst * 2 + 1];
    let mut dog = Watchdog::new();
    while got < total {
        let n = if got & 1 == 0 {
            let n = rx.recv_slice(&mut out);
            for &(p, s) in &out[..n] {
                assert_eq!(s, next[p as usize], "producer {p} out of order");
                next[p as usize] += 1;
            }
            n
        } else {
            rx.recv((got % 13) as usize + 1, |(p, s)| {
                assert_eq!(s, next[p as usize], "producer {p} out of order");
                next[p as usize] += 1;
            })
        };
        got += n as u64;
        dog.tick(n, "consumer starved: items lost");
    }
    let done: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(next.iter().all(|&c| c == per_producer), "{next:?}");
    assert!(rx.is_empty());
    assert_eq!(rx.recv(usize::MAX, |_| panic!("extra item")), 0);
    for (tx, _) in &done {
        assert_eq!(
            tx.free_units(),
            all_back(tx),
            "unit lost by producer {}",
            tx.id()
        );
    }
    done.iter().map(|(_, full)| full).sum()
}

fn per_producer() -> u32 {
    if cfg!(miri) {
        300
    } else {
        200_000
    }
}

#[test]
fn stress_three_producers_default_depth() {
    stress_mpsc(3, per_producer(), 4096, 32, false);
}

#[test]
fn stress_three_producers_slices() {
    stress_mpsc(3, per_producer(), 1024, 8, true);
}

#[test]
fn stress_tiny_depth_forces_full_path() {
    // depth 4, burst 2, 3 producers -> 1 unit each: almost every send of
    // more than 2 items finds the queue full.
    let full = stress_mpsc(3, per_producer() / 4, 4, 2, false);
    assert!(full > 0, "the full path was never taken");
    let full = stress_mpsc(1, per_producer() / 4, 4, 2, true);
    assert!(full > 0, "the full path was never taken");
}

#[test]
fn stress_sharded() {
    let producers = 3;
    let n = per_producer() / 2;
    let (txs, mut rx) = sharded::<(u32, u32)>(producers, 16, 2, mem()).unwrap();
    let handles: Vec<_> = txs
        .into_iter()
        .enumerate()
        .map(|(p, mut tx)| {
            thread::spawn(move || {
                let mut next = 0u32;
                let mut dog = Watchdog::new();
                while next < n {
                    let k = tx.send(&mut (next..n.min(next + 5)).map(|s| (p as u32, s)));
                    next += k as u32;
                    dog.tick(k, "sharded producer blocked");
                }
                tx
            })
        })
        .collect();
    let mut next = vec![0u32; producers];
    let mut got = 0u64;
    let mut out = [(0u32, 0u32); 5];
    let mut dog = Watchdog::new();
    while got < producers as u64 * n as u64 {
        let k = rx.recv_slice(&mut out);
        for &(p, s) in &out[..k] {
            assert_eq!(s, next[p as usize]);
            next[p as usize] += 1;
        }
        got += k as u64;
        dog.tick(k, "sharded consumer starved");
    }
    let txs: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(rx.is_empty());
    for tx in &txs {
        assert_eq!(tx.free_units(), all_back(tx));
    }
}

/// A probe counts what was published and not yet returned (a partly read
/// unit whole), over every producer, and keeps the memory alive alone.
#[test]
fn probe_counts_items_in_the_queue() {
    let (mut txs, mut rx) = channel::<u32>(2, 16, 4, mem()).unwrap();
    let probe = rx.probe();
    assert_eq!((probe.len(), probe.capacity()), (0, 16));
    assert_eq!(txs[0].send_slice(&[1, 2, 3, 4, 5]), 5); // units of 4 and 1
    assert_eq!(txs[1].send_slice(&[6, 7]), 2);
    assert_eq!(probe.len(), 7);
    let mut out = [0u32; 3];
    // FIFO per producer, order across producers unspecified: read one
    // unit partly, then the rest.
    let got = rx.recv_slice(&mut out);
    assert_eq!(got, 3);
    assert!(probe.len() >= 4 && probe.len() <= 7, "{}", probe.len());
    drain_all(&mut rx);
    assert_eq!(probe.len(), 0);
    // Full: the budgets (8 each).
    assert_eq!(txs[0].send_slice(&[0; 20]), 8);
    assert_eq!(probe.len(), 8);
    // The consumer's drop drops and returns what is published.
    drop((txs, rx));
    assert!(probe.is_empty());
}

// ---- in place (send_with / recv_with) --------------------------------------

/// Sends `items` in place, as many runs as it takes; returns how many went.
fn send_in_place(tx: &mut Producer<u64>, items: &[u64]) -> usize {
    let mut done = 0;
    while done < items.len() {
        let rest = &items[done..];
        let Some(n) = tx.send_with(rest.len(), |slots| {
            let k = slots.len().min(rest.len());
            slots[..k].copy_from_slice(&rest[..k]);
            k
        }) else {
            break; // full
        };
        done += n;
    }
    done
}

#[test]
fn in_place_round_trip_one_and_several_producers() {
    for producers in [1, 2] {
        let (mut txs, mut rx) = channel::<u64>(producers, 64, 8, mem()).unwrap();
        let budget = txs[0].capacity();
        let items: Vec<u64> = (0..budget as u64 + 5).collect();
        // The budget is the limit: the rest is refused (None), not taken.
        assert_eq!(send_in_place(&mut txs[0], &items), budget);
        assert_eq!(txs[0].send_with(4, |_| unreachable!("no room")), None);
        assert_eq!(
            txs[0].send_with(0, |_| unreachable!("nothing asked")),
            Some(0)
        );
        // Runs are one unit each (8), in order; a partly consumed run
        // leaves the rest first in line, with what `take` wrote into it.
        let mut got = Vec::new();
        let n = rx.recv_with(usize::MAX, |run| {
            assert_eq!(run.len(), 8);
            got.extend_from_slice(&run[..3]);
            run[3] = 1000;
            3
        });
        assert_eq!(n, 3);
        let n = rx.recv_with(2, |run| {
            assert_eq!(run, &[1000, 4]);
            got.extend_from_slice(run);
            2
        });
        assert_eq!(n, 2);
        got[3] = 3; // the value we wrote over item 3
        while rx.recv_with(usize::MAX, |run| {
            got.extend_from_slice(run);
            run.len()
        }) > 0
        {}
        assert_eq!(got, items[..budget]);
        assert_eq!(rx.recv_with(8, |_| unreachable!("empty")), 0);
        // Consumed items free the budget; `fill` writing nothing publishes
        // nothing.
        assert_eq!(txs[0].send_with(8, |_| 0), Some(0));
        assert!(rx.is_empty());
        assert_eq!(send_in_place(&mut txs[0], &items[..20]), 20);
        assert_eq!(drain_all(&mut rx), items[..20]);
        assert_eq!(txs[0].free_units(), all_back(&txs[0]));
    }
}

#[test]
fn in_place_consuming_nothing_keeps_the_run() {
    let (mut txs, mut rx) = channel::<u64>(1, 16, 4, mem()).unwrap();
    assert_eq!(send_in_place(&mut txs[0], &[7, 8, 9]), 3);
    for _ in 0..3 {
        assert_eq!(rx.recv_with(8, |run| run.len() - run.len()), 0);
    }
    assert_eq!(drain_all(&mut rx), vec![7, 8, 9]);
}

#[test]
fn in_place_sharded_and_through_the_traits() {
    let (txs, rx) = sharded::<u64>(3, 64, 4, mem()).unwrap();
    let mut txs: Vec<Box<dyn BurstSender<u64>>> = txs
        .into_iter()
        .map(|t| Box::new(t) as Box<dyn BurstSender<u64>>)
        .collect();
    let mut rx: Box<dyn BurstReceiver<u64>> = Box::new(rx);
    for (p, tx) in txs.iter_mut().enumerate() {
        let sent = tx.send_with(4, &mut |slots| {
            for (i, s) in slots.iter_mut().enumerate() {
                *s = (p as u64) << 32 | i as u64;
            }
            slots.len()
        });
        assert_eq!(sent, Some(4));
    }
    // One run per call, each from one shard, shards in rotation.
    let mut shards = Vec::new();
    for _ in 0..3 {
        let n = rx.recv_with(16, &mut |run| {
            let p = run[0] >> 32;
            assert!(run
                .iter()
                .enumerate()
                .all(|(i, &x)| x == p << 32 | i as u64));
            shards.push(p);
            run.len()
        });
        assert_eq!(n, 4);
    }
    shards.sort_unstable();
    assert_eq!(shards, vec![0, 1, 2]);
    assert!(rx.is_empty());
}

/// Producers sending in place and a consumer taking runs in place, partly
/// (as a transmitting PMD that takes a prefix), with real threads.
fn stress_in_place(producers: usize, depth: usize, burst: usize, sharded_queues: bool) {
    let per = per_producer() / 4;
    let (txs, mut rx): (Vec<Producer<u64>>, Box<dyn BurstReceiver<u64>>) = if sharded_queues {
        let (t, r) = sharded::<u64>(producers, depth, burst, mem()).unwrap();
        (t, Box::new(r))
    } else {
        let (t, r) = channel::<u64>(producers, depth, burst, mem()).unwrap();
        (t, Box::new(r))
    };
    let handles: Vec<_> = txs
        .into_iter()
        .enumerate()
        .map(|(p, mut tx)| {
            thread::spawn(move || {
                let mut next = 0u32;
                let mut dog = Watchdog::new();
                while next < per {
                    let want = ((next % 7) as usize + 1).min((per - next) as usize);
                    let n = tx
                        .send_with(want, |slots| {
                            for (i, s) in slots.iter_mut().enumerate() {
                                *s = ((p as u64) << 32) | (u64::from(next) + i as u64);
                            }
                            slots.len()
                        })
                        .unwrap_or(0);
                    next += n as u32;
                    dog.tick(n, "producer blocked: queue full forever");
                }
                tx
            })
        })
        .collect();
    let mut next = vec![0u64; producers];
    let total = producers as u64 * u64::from(per);
    let (mut got, mut calls) = (0u64, 0u64);
    let mut dog = Watchdog::new();
    while got < total {
        calls += 1;
        let n = rx.recv_with(burst * 2, &mut |run| {
            // Consume a prefix: all, half or none of the run.
            let k = match calls % 3 {
                0 => run.len(),
                1 => run.len().div_ceil(2),
                _ => 0,
            };
            for &x in &run[..k] {
                let p = (x >> 32) as usize;
                assert_eq!(x & 0xffff_ffff, next[p], "producer {p} out of order");
                next[p] += 1;
            }
            k
        });
        got += n as u64;
        dog.tick(
            n + usize::from(calls % 3 == 2),
            "consumer starved: items lost",
        );
    }
    for h in handles {
        let tx = h.join().unwrap();
        assert_eq!(tx.free_units(), all_back(&tx), "unit lost");
    }
    assert!(next.iter().all(|&c| c == u64::from(per)), "{next:?}");
    assert!(rx.is_empty());
}

#[test]
fn stress_in_place_one_producer() {
    stress_in_place(1, 256, 32, false);
}

#[test]
fn stress_in_place_several_producers_tiny_depth() {
    stress_in_place(3, 16, 4, false);
}

#[test]
fn stress_in_place_sharded() {
    stress_in_place(3, 64, 8, true);
}

// ---- round trip (round_trip / take_back_with) ------------------------------

/// Takes back everything `tx` can, runs of at most `max`; returns it.
fn take_back_all(tx: &mut Producer<u64>, max: usize) -> Vec<u64> {
    let mut back = Vec::new();
    while tx.take_back_with(max, |run| {
        back.extend_from_slice(run);
        run.len()
    }) > 0
    {}
    back
}

const DONE: u64 = 1 << 63;

#[test]
fn round_trip_items_come_back_processed_in_order() {
    for producers in [1, 2] {
        let (mut txs, mut rx) = round_trip::<u64>(producers, 64, 8, mem()).unwrap();
        let budget = txs[0].capacity();
        let items: Vec<u64> = (0..budget as u64 + 5).collect();
        assert_eq!(send_in_place(&mut txs[0], &items), budget);
        assert_eq!(txs[0].outstanding(), budget);
        // Nothing handed back yet: nothing to take back.
        assert_eq!(txs[0].take_back_with(8, |_| unreachable!("none back")), 0);
        // The consumer works in place; what it says it consumed goes back.
        let n = rx.recv_with(usize::MAX, |run| {
            for x in run.iter_mut().take(5) {
                *x |= DONE;
            }
            5
        });
        assert_eq!(n, 5);
        // The unit is not all processed: nothing is back yet.
        assert_eq!(txs[0].take_back_with(8, |_| unreachable!("unit open")), 0);
        while rx.recv_with(usize::MAX, |run| {
            for x in run.iter_mut() {
                *x |= DONE;
            }
            run.len()
        }) > 0
        {}
        // Processed, not taken back: the budget is still spent.
        assert_eq!(txs[0].send_with(4, |_| unreachable!("no room")), None);
        // A prefix taken back frees exactly that much budget; the rest
        // stays first in line with what `take` wrote.
        let n = txs[0].take_back_with(usize::MAX, |run| {
            assert_eq!(run.len(), 8);
            run[3] = 77;
            3
        });
        assert_eq!(n, 3);
        assert_eq!(txs[0].outstanding(), budget - 3);
        assert_eq!(send_in_place(&mut txs[0], &[1000, 1001, 1002, 1003]), 3);
        let mut back = take_back_all(&mut txs[0], 5);
        assert_eq!(back[0], 77);
        back[0] = 3 | DONE;
        let want: Vec<u64> = (3..budget as u64).map(|x| x | DONE).collect();
        assert_eq!(back, want);
        // The three sent since: published, not processed yet.
        assert_eq!(txs[0].outstanding(), 3);
        assert_eq!(drain_all(&mut rx), vec![1000, 1001, 1002]);
        assert_eq!(take_back_all(&mut txs[0], 8), vec![1000, 1001, 1002]);
        assert_eq!(txs[0].outstanding(), 0);
        assert!(rx.is_empty());
        // Every unit is free again once the consumer moved past it.
        assert_eq!(send_in_place(&mut txs[0], &items[..budget]), budget);
        drain_all(&mut rx);
        assert_eq!(take_back_all(&mut txs[0], 64), items[..budget]);
        assert_eq!(txs[0].free_units(), all_back(&txs[0]));
    }
}

#[test]
fn round_trip_sharded_and_through_the_traits() {
    let (txs, rx) = round_trip_sharded::<u64>(2, 32, 4, mem()).unwrap();
    let mut txs: Vec<Box<dyn BurstSender<u64>>> = txs
        .into_iter()
        .map(|t| Box::new(t) as Box<dyn BurstSender<u64>>)
        .collect();
    let mut rx: Box<dyn BurstReceiver<u64>> = Box::new(rx);
    for (p, tx) in txs.iter_mut().enumerate() {
        let sent = tx.send_with(4, &mut |slots| {
            for (i, s) in slots.iter_mut().enumerate() {
                *s = (p as u64) << 32 | i as u64;
            }
            slots.len()
        });
        assert_eq!(sent, Some(4));
        assert_eq!(tx.outstanding(), 4);
    }
    while rx.recv_with(16, &mut |run| {
        run.iter_mut().for_each(|x| *x |= DONE);
        run.len()
    }) > 0
    {}
    for (p, tx) in txs.iter_mut().enumerate() {
        let mut back = Vec::new();
        let n = tx.take_back_with(16, &mut |run| {
            back.extend_from_slice(run);
            run.len()
        });
        assert_eq!(n, 4);
        let want: Vec<u64> = (0..4).map(|i| (p as u64) << 32 | i | DONE).collect();
        assert_eq!(back, want);
        assert_eq!(tx.outstanding(), 0);
    }
    // A queue whose items never come back takes nothing back.
    let (mut plain, _rx) = channel::<u64>(1, 16, 4, mem()).unwrap();
    assert_eq!(send_in_place(&mut plain[0], &[1, 2]), 2);
    let plain: &mut dyn BurstSender<u64> = &mut plain[0];
    assert_eq!(plain.take_back_with(8, &mut |_| unreachable!()), 0);
    assert_eq!(plain.outstanding(), 0);
}

/// Each producer thread sends in place and takes back (as an RX+TX lcore
/// does), partly at times; the consumer marks every item it processes
/// and checks the order. Every item comes back once, marked, in order.
fn stress_round_trip(producers: usize, depth: usize, burst: usize, sharded_queues: bool) {
    let per = per_producer() / 4;
    let (txs, mut rx): (Vec<Producer<u64>>, Box<dyn BurstReceiver<u64>>) = if sharded_queues {
        let (t, r) = round_trip_sharded::<u64>(producers, depth, burst, mem()).unwrap();
        (t, Box::new(r))
    } else {
        let (t, r) = round_trip::<u64>(producers, depth, burst, mem()).unwrap();
        (t, Box::new(r))
    };
    let total = producers as u64 * u64::from(per);
    let processed = StdArc::new(AtomicUsize::new(0));
    let handles: Vec<_> = txs
        .into_iter()
        .enumerate()
        .map(|(p, mut tx)| {
            thread::spawn(move || {
                let (mut next, mut back, mut calls) = (0u32, 0u32, 0u32);
                let mut dog = Watchdog::new();
                while back < per {
                    let mut moved = 0;
                    if next < per {
                        let want = ((next % 7) as usize + 1).min((per - next) as usize);
                        let n = tx
                            .send_with(want, |slots| {
                                for (i, s) in slots.iter_mut().enumerate() {
                                    *s = ((p as u64) << 32) | (u64::from(next) + i as u64);
                                }
                                slots.len()
                            })
                            .unwrap_or(0);
                        next += n as u32;
                        moved += n;
                    }
                    calls += 1;
                    let n = tx.take_back_with(burst, |run| {
                        let k = if calls % 3 == 1 {
                            run.len().div_ceil(2)
                        } else {
                            run.len()
                        };
                        for &x in &run[..k] {
                            assert_eq!(x, DONE | (p as u64) << 32 | u64::from(back));
                            back += 1;
                        }
                        k
                    });
                    moved += n;
                    assert!(tx.outstanding() <= tx.capacity());
                    dog.tick(moved, "producer stuck: items not coming back");
                }
                assert_eq!(tx.outstanding(), 0);
                tx
            })
        })
        .collect();
    let mut next = vec![0u64; producers];
    let mut dog = Watchdog::new();
    let mut got = 0u64;
    while got < total {
        let n = rx.recv_with(burst * 2, &mut |run| {
            for x in run.iter_mut() {
                let p = (*x >> 32) as usize;
                assert_eq!(*x & 0xffff_ffff, next[p], "producer {p} out of order");
                next[p] += 1;
                *x |= DONE;
            }
            run.len()
        });
        got += n as u64;
        processed.fetch_add(n, O::Relaxed);
        dog.tick(n, "consumer starved: items lost");
    }
    for h in handles {
        let tx = h.join().unwrap();
        assert_eq!(tx.free_units(), all_back(&tx), "unit lost");
    }
    assert_eq!(processed.load(O::Relaxed) as u64, total);
    assert!(rx.is_empty());
}

#[test]
fn stress_round_trip_one_producer() {
    stress_round_trip(1, 256, 32, false);
}

#[test]
fn stress_round_trip_several_producers_tiny_depth() {
    stress_round_trip(3, 16, 4, false);
}

#[test]
fn stress_round_trip_sharded() {
    stress_round_trip(3, 64, 8, true);
}

/// Coalescing (`Producer::send_coalesced`) over a shared queue: two producers
/// send runs of 1 to 7 items, interleaved, with flushes now and then,
/// while the consumer reads between sends; every item arrives once and in
/// order per producer, units are whole where runs fit, the budget holds
/// (open units count), and every unit comes back.
#[test]
fn coalescing_keeps_order_budget_and_units() {
    let (mut txs, mut rx) = channel::<u64>(2, 64, 8, mem()).unwrap();
    let mut next = [0u64; 2];
    let mut seen = [0u64; 2];
    let mut sizes = Vec::new();
    let rounds = if cfg!(miri) { 200 } else { 2000 };
    for round in 0..rounds {
        let p = (round % 2) as usize;
        let run = 1 + (round * 5 % 7) as usize;
        let sent = txs[p].send_coalesced(run, |slots| {
            for s in slots.iter_mut() {
                *s = ((p as u64) << 32) | next[p];
                next[p] += 1;
            }
            slots.len()
        });
        if sent.is_some() {
            assert!(
                (next[p] - seen[p]) as usize <= txs[p].capacity(),
                "budget exceeded"
            );
        }
        if round % 13 == 0 {
            txs[p].flush();
        }
        if round % 3 == 0 {
            rx.recv_with(usize::MAX, &mut |items: &mut [u64]| {
                sizes.push(items.len());
                for &x in items.iter() {
                    let q = (x >> 32) as usize;
                    assert_eq!(x & 0xffff_ffff, seen[q], "producer {q} out of order");
                    seen[q] += 1;
                }
                items.len()
            });
        }
    }
    for tx in txs.iter_mut() {
        tx.flush();
    }
    for x in drain_all(&mut rx) {
        let q = (x >> 32) as usize;
        assert_eq!(x & 0xffff_ffff, seen[q], "producer {q} out of order");
        seen[q] += 1;
    }
    assert_eq!(seen, next);
    assert!(sizes.contains(&8), "no whole unit among {sizes:?}");
    for tx in txs.iter_mut() {
        assert_eq!(tx.send_slice(&[]), 0);
        assert_eq!(tx.free_units(), tx.units());
    }
}

/// Coalescing: a `send_slice` after a coalesced send publishes the open
/// unit first (order kept), and dropping a producer publishes its open
/// unit (nothing it sent is lost).
#[test]
fn coalescing_open_unit_goes_first_and_on_drop() {
    let (mut txs, mut rx) = channel::<u64>(1, 64, 8, mem()).unwrap();
    let mut tx = txs.pop().unwrap();
    assert_eq!(
        tx.send_coalesced(8, |s| {
            s[..2].copy_from_slice(&[1, 2]);
            2
        }),
        Some(2)
    );
    assert!(rx.is_empty());
    assert_eq!(tx.send_slice(&[3, 4]), 2);
    assert_eq!(
        tx.send_coalesced(8, |s| {
            s[0] = 5;
            1
        }),
        Some(1)
    );
    drop(tx);
    assert_eq!(drain_all(&mut rx), [1, 2, 3, 4, 5]);
}

//! Loom model checks of the TransferQueue protocol (`--cfg loom`).
//!
//! Run: `scripts/loom.sh` (src/queue/ as a crate of its own,
//! `crates/queue-loom`, tested under `RUSTFLAGS="--cfg loom"`).
//!
//! What loom checks here: every interleaving (up to the preemption bound) of
//! the publish CAS / detach swap / return store / producer reload, with loom's
//! C11 memory model (a Relaxed or too-weak ordering shows up as a stale
//! `next`/head value, i.e. a lost or duplicated unit), data races on unit
//! contents (one `loom::cell::UnsafeCell` per unit, see `sync::Track`), the
//! per-producer FIFO self-check in `Consumer::enter`, and leaks of the shared
//! `Arc` at the end of every execution. Item slots are raw arena memory, so
//! races are detected per unit, not per slot.

use super::*;
use ::loom::thread;
use std::sync::atomic::{AtomicUsize, Ordering as O};
use std::sync::Arc as StdArc;

fn mem() -> StdArc<dyn UnitMemory> {
    StdArc::new(GlobalMemory)
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    model_with(::loom::model::Builder::new(), f)
}

fn model_with(mut b: ::loom::model::Builder, f: impl Fn() + Sync + Send + 'static) {
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    RUNS.store(0, O::SeqCst);
    b.check(move || {
        RUNS.fetch_add(1, O::SeqCst);
        f()
    });
    eprintln!("executions: {}", RUNS.load(O::SeqCst));
}

/// Polls `rx` (yielding when empty) until `total` items `(producer, seq)`
/// arrived, asserting FIFO per producer; returns how many came from each.
fn drain_fifo<const P: usize>(rx: &mut Consumer<(usize, u32)>, total: usize) -> [u32; P] {
    let mut next = [0u32; P];
    let mut got = 0;
    while got < total {
        let n = rx.recv(usize::MAX, |(p, s): (usize, u32)| {
            assert_eq!(s, next[p], "producer {p} out of order");
            next[p] += 1;
        });
        got += n;
        if n == 0 {
            thread::yield_now();
        }
    }
    next
}

/// Two producers each publish items 0 and 1 with `send` (2 units) while
/// the consumer detaches; every item arrives exactly once, FIFO per
/// producer, and both units of each producer come back.
fn two_producers_model(send: fn(&mut Producer<(usize, u32)>, usize) -> usize) {
    model(move || {
        // depth 4, burst 1, 2 producers -> 2 units each.
        let (txs, mut rx) = channel::<(usize, u32)>(2, 4, 1, mem()).unwrap();
        let handles: Vec<_> = txs
            .into_iter()
            .enumerate()
            .map(|(p, mut tx)| {
                thread::spawn(move || {
                    assert_eq!(send(&mut tx, p), 2);
                    tx
                })
            })
            .collect();
        // Concurrent with the producers: poll until everything arrived.
        assert_eq!(drain_fifo::<2>(&mut rx, 4), [2, 2]);
        for h in handles {
            assert_eq!(h.join().unwrap().free_units(), 2);
        }
        assert!(rx.is_empty());
    });
}

/// One unit per item, one publish CAS per unit (`send`).
#[test]
fn two_producers_push_detach() {
    two_producers_model(|tx, p| tx.send(&mut (0..2).map(|s| (p, s))));
}

/// `send_slice` fills both units and publishes them as one pre-linked
/// chain with one CAS.
#[test]
fn chain_publish_two_producers() {
    two_producers_model(|tx, p| tx.send_slice(&[(p, 0), (p, 1)]));
}

/// One producer with a budget of two items (three units: one more than the
/// budget, see *Single producer*) sends more than fits, spinning on full;
/// the consumer spins on empty. Units are linked by a Release store,
/// followed by Acquire loads, returned and reused.
#[test]
fn unit_return_and_reuse() {
    model(|| {
        let (mut txs, mut rx) = channel::<u32>(1, 2, 1, mem()).unwrap();
        let mut tx = txs.pop().unwrap();
        let h = thread::spawn(move || {
            let mut next = 0;
            while next < 3 {
                let n = tx.send(&mut (next..3));
                next += n as u32;
                if n == 0 {
                    thread::yield_now();
                }
            }
            tx
        });
        let mut got = Vec::new();
        while got.len() < 3 {
            if rx.recv(1, |x| got.push(x)) == 0 {
                thread::yield_now();
            }
        }
        let tx = h.join().unwrap();
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(tx.free_units(), 2);
    });
}

/// Full queue under concurrency: what `send` takes is a prefix, the rest stays
/// with the caller, and exactly that prefix comes out. Explores both outcomes:
/// the second send finds the queue full, or finds the unit already returned.
#[test]
fn full_queue() {
    model(|| {
        // capacity 2 items, in 3 units of 2 slots: the budget makes it full
        let (mut txs, mut rx) = channel::<u32>(1, 2, 2, mem()).unwrap();
        let mut tx = txs.pop().unwrap();
        // Consumer in the spawned thread, two polls concurrent with the sends
        // (no spinning, so loom's DPOR can place the consumer's detach and
        // return between the producer's steps).
        let h = thread::spawn(move || {
            let mut got = Vec::new();
            rx.recv(usize::MAX, |x| got.push(x));
            rx.recv(usize::MAX, |x| got.push(x));
            (rx, got)
        });
        let mut it = 0..5u32;
        let a = tx.send(&mut it);
        let b = tx.send(&mut it);
        // the untaken items are still in the iterator
        assert_eq!(it.start as usize, a + b);
        let (mut rx, mut got) = h.join().unwrap();
        rx.recv(usize::MAX, |x| got.push(x));
        assert!(matches!(a, 2 | 4 | 5), "first send took {a}");
        let n = a + b;
        assert_eq!(got, (0..n as u32).collect::<Vec<_>>());
        // All back but the last unit read, which the consumer keeps.
        assert_eq!(tx.free_units(), tx.units() - 1);
        OUTCOMES[n].fetch_add(1, O::Relaxed);
    });
    // The model must have reached a full queue and a reused unit (4 or 5
    // items need the first unit's 2 items back, and then it is the only
    // returned unit: LIFO reuse).
    assert!(OUTCOMES[2].load(O::Relaxed) > 0, "never full");
    assert!(
        OUTCOMES[4].load(O::Relaxed) + OUTCOMES[5].load(O::Relaxed) > 0,
        "never reused"
    );
}

/// One-item sends into units of 2 slots: the item budget (2), not the unit
/// count, makes the queue full, and an item fits again only once its
/// items have come back (the producer reloads the `returned` count). With
/// a warm limit of one unit, the third send reuses the first unit if the
/// consumer has moved past it by then (LIFO), else takes a fresh one: both
/// happen.
#[test]
fn one_item_sends_budget_and_reuse() {
    static FULL: AtomicUsize = AtomicUsize::new(0);
    static WARM: [AtomicUsize; 4] = [
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ];
    model(|| {
        // depth 2, burst 2 -> capacity 2, 3 units, warm limit 1
        let (mut txs, mut rx) = channel::<u32>(1, 2, 2, mem()).unwrap();
        let mut tx = txs.pop().unwrap();
        assert_eq!((tx.capacity(), tx.units(), tx.warm_limit), (2, 3, 1));
        let h = thread::spawn(move || {
            let mut got = Vec::new();
            while got.len() < 3 {
                if rx.recv(1, |x| got.push(x)) == 0 {
                    thread::yield_now();
                }
            }
            got
        });
        let mut next = 0;
        while next < 3 {
            if tx.send(&mut std::iter::once(next)) == 1 {
                next += 1;
            } else {
                FULL.fetch_add(1, O::Relaxed);
                thread::yield_now();
            }
        }
        assert_eq!(h.join().unwrap(), [0, 1, 2]);
        assert_eq!(tx.free_units(), 2);
        WARM[tx.warm as usize].fetch_add(1, O::Relaxed);
    });
    assert!(FULL.load(O::Relaxed) > 0, "never full");
    assert!(WARM[2].load(O::Relaxed) > 0, "first unit never reused");
    assert!(WARM[3].load(O::Relaxed) > 0, "third unit never used");
}

/// One producer, a budget of one item in units of two slots: the consumer
/// keeps the last unit it read until another is linked after it, so the
/// producer can send again only because that unit's item is counted back
/// at once (without it, the queue would stay full forever). Three items,
/// each its own unit, arrive in order while the two sides race.
#[test]
fn single_producer_items_back_before_the_unit() {
    model(|| {
        let (mut txs, mut rx) = channel::<u32>(1, 1, 2, mem()).unwrap();
        let mut tx = txs.pop().unwrap();
        assert_eq!((tx.capacity(), tx.units()), (1, 2));
        let h = thread::spawn(move || {
            let mut next = 0;
            while next < 3 {
                if tx.send_slice(&[next]) == 1 {
                    next += 1;
                } else {
                    thread::yield_now();
                }
            }
            tx
        });
        let mut got = Vec::new();
        while got.len() < 3 {
            if rx.recv(usize::MAX, |x| got.push(x)) == 0 {
                thread::yield_now();
            }
        }
        let tx = h.join().unwrap();
        assert_eq!(got, [0, 1, 2]);
        assert!(rx.is_empty());
        assert_eq!(tx.free_units(), 1);
    });
}

static OUTCOMES: [AtomicUsize; 6] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

struct Counted(StdArc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, O::Relaxed);
    }
}

/// Shutdown with items inside: the consumer reads one item and goes away while
/// the producer may still be sending; the last handle drops everything left.
/// Every item is dropped exactly once (created == dropped) and the shared
/// state is freed (loom's Arc leak check).
#[test]
fn drain_at_shutdown() {
    model(|| {
        let created = StdArc::new(AtomicUsize::new(0));
        let dropped = StdArc::new(AtomicUsize::new(0));
        // depth 4, burst 2 -> 2 units of 2 items
        let (mut txs, mut rx) = channel::<Counted>(1, 4, 2, mem()).unwrap();
        let mut tx = txs.pop().unwrap();
        let (c, d) = (created.clone(), dropped.clone());
        let h = thread::spawn(move || {
            let mut it = (0..3).map(|_| {
                c.fetch_add(1, O::Relaxed);
                Counted(d.clone())
            });
            // 2 units of 2 items: all 3 fit
            assert_eq!(tx.send(&mut it), 3);
            // the producer handle is dropped here, maybe last
        });
        while rx.recv(1, drop) == 0 {
            thread::yield_now();
        }
        drop(rx); // maybe last
        h.join().unwrap();
        assert_eq!(created.load(O::Relaxed), 3);
        assert_eq!(dropped.load(O::Relaxed), 3);
    });
}

/// Sharded: two single-producer queues polled round-robin.
#[test]
fn sharded_two_producers() {
    model(|| {
        let (txs, mut rx) = sharded::<(usize, u32)>(2, 2, 1, mem()).unwrap();
        let handles: Vec<_> = txs
            .into_iter()
            .enumerate()
            .map(|(p, mut tx)| {
                thread::spawn(move || {
                    assert_eq!(tx.send_slice(&[(p, 0)]), 1);
                })
            })
            .collect();
        let mut got = Vec::new();
        while got.len() < 2 {
            if rx.recv(usize::MAX, |x| got.push(x)) == 0 {
                thread::yield_now();
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        got.sort_unstable();
        assert_eq!(got, [(0, 0), (1, 0)]);
    });
}

/// In place (`send_with` / `recv_with`), one producer with a budget of two
/// items in units of two slots sending three, and two producers sharing a
/// list sending two each (more would outgrow loom's path bound): the
/// producers write items straight into lent slots, the consumer takes lent
/// runs and consumes only a prefix of each (one item), as a transmitting
/// PMD that takes part of a burst. Every item arrives once, in order per
/// producer, with the values written into the slots (the slots' writes
/// are published with the unit), and every unit comes back.
/// `coalesce`: each producer coalesces (`Producer::send_coalesced`), sends one
/// item per `send_with` (a unit fills over two sends and is published by
/// the second) and flushes the unit it leaves open at the end.
fn in_place_model(producers: usize, coalesce: bool) {
    let items: u64 = if producers == 1 { 3 } else { 2 };
    let run = if coalesce { 1 } else { 2 };
    model(move || {
        let (txs, mut rx) = channel::<u64>(producers, 2 * producers, 2, mem()).unwrap();
        let handles: Vec<_> = txs
            .into_iter()
            .enumerate()
            .map(|(p, mut tx)| {
                thread::spawn(move || {
                    let mut next = 0u64;
                    while next < items {
                        let fill = |slots: &mut [u64]| {
                            let k = slots.len().min((items - next) as usize);
                            for (i, s) in slots[..k].iter_mut().enumerate() {
                                *s = ((p as u64) << 8) | (next + i as u64);
                            }
                            k
                        };
                        let sent = if coalesce {
                            tx.send_coalesced(run, fill)
                        } else {
                            tx.send_with(run, fill)
                        };
                        match sent {
                            Some(n) => next += n as u64,
                            None => thread::yield_now(),
                        }
                    }
                    tx.flush();
                    tx
                })
            })
            .collect();
        let mut next = vec![0u64; producers];
        let mut got = 0;
        while got < items as usize * producers {
            let n = rx.recv_with(usize::MAX, |run| {
                let x = run[0];
                let p = (x >> 8) as usize;
                assert_eq!(x & 0xff, next[p], "producer {p} out of order");
                next[p] += 1;
                1
            });
            got += n;
            if n == 0 {
                thread::yield_now();
            }
        }
        for h in handles {
            let tx = h.join().unwrap();
            assert_eq!(tx.free_units(), tx.units() - usize::from(producers == 1));
        }
        assert!(rx.is_empty());
    });
}

#[test]
fn in_place_one_producer() {
    in_place_model(1, false);
}

#[test]
fn in_place_two_producers() {
    in_place_model(2, false);
}

#[test]
fn coalescing_one_producer() {
    in_place_model(1, true);
}

#[test]
fn coalescing_two_producers() {
    in_place_model(2, true);
}

/// Scatter in place (the forwarder's `PacketSender::scatter`): two
/// producers each hold a lent unit of two shared queues at once (the
/// second opened inside the first's `send_with`, the first published
/// last) and write one item into each; one consumer drains both queues.
/// Every item arrives once, with the value written, in the queue it was
/// written into, and every unit comes back: a producer's open units in
/// several queues neither wait for nor disturb the other producer's.
#[test]
fn scatter_two_producers_two_queues() {
    model(|| {
        let (xs, mut rx_x) = channel::<u64>(2, 2, 1, mem()).unwrap();
        let (ys, mut rx_y) = channel::<u64>(2, 2, 1, mem()).unwrap();
        let handles: Vec<_> = xs
            .into_iter()
            .zip(ys)
            .enumerate()
            .map(|(p, (mut x, mut y))| {
                thread::spawn(move || {
                    let p = p as u64;
                    let sent = x.send_with(1, |sx| {
                        let inner = y.send_with(1, |sy| {
                            sy[0] = 0x200 | p;
                            1
                        });
                        assert_eq!(inner, Some(1), "a producer's own unit is free");
                        sx[0] = 0x100 | p;
                        1
                    });
                    assert_eq!(sent, Some(1));
                    (x, y)
                })
            })
            .collect();
        let mut seen = [[false; 2]; 2];
        let mut got = 0;
        while got < 4 {
            let mut n = 0;
            for (q, rx) in [&mut rx_x, &mut rx_y].into_iter().enumerate() {
                n += rx.recv_with(usize::MAX, |run| {
                    let v = run[0];
                    assert_eq!(v >> 8, q as u64 + 1, "item in the wrong queue");
                    let p = (v & 0xff) as usize;
                    assert!(!seen[q][p], "item twice");
                    seen[q][p] = true;
                    1
                });
            }
            got += n;
            if n == 0 {
                thread::yield_now();
            }
        }
        for h in handles {
            let (x, y) = h.join().unwrap();
            assert_eq!(x.free_units(), x.units());
            assert_eq!(y.free_units(), y.units());
        }
        assert!(rx_x.is_empty() && rx_y.is_empty());
    });
}

/// Round trip: each producer sends items in place and takes back what the
/// consumer handed back (as an RX+TX lcore does), the consumer marks each
/// item where it lies (bit 7) and hands its unit back. Every item comes
/// back to its producer once, marked, in order; with one producer the
/// items of the consumer's last unit are taken back while the consumer
/// still holds the unit (its slots are not touched by both: loom's
/// per-unit cell), and the unit is refilled only once returned too.
fn round_trip_model(producers: usize) {
    // One producer refills its units (a budget of one item, three
    // items); two producers send one item each (the several-producer
    // return; a refill there is the same code).
    let items = move |_p: usize| -> u64 {
        if producers == 1 {
            3
        } else {
            1
        }
    };
    // A budget of one item per producer: each unit is refilled, so only
    // after the consumer returned it and its producer took its item back.
    // Both sides poll, hence the longer branch limit.
    let mut b = ::loom::model::Builder::new();
    b.max_branches = b.max_branches.max(100_000);
    model_with(b, move || {
        let (txs, mut rx) = round_trip::<u64>(producers, producers, 2, mem()).unwrap();
        let handles: Vec<_> = txs
            .into_iter()
            .enumerate()
            .map(|(p, mut tx)| {
                thread::spawn(move || {
                    let items = items(p);
                    // Producer 0 takes back while the consumer runs; the
                    // others only send (taken back after the join: three
                    // polling threads do not finish within the bounds).
                    let polls = p == 0;
                    let (mut next, mut back) = (0u64, 0u64);
                    while if polls { back < items } else { next < items } {
                        let mut moved = 0;
                        if next < items {
                            if let Some(n) = tx.send_with(2, |slots| {
                                let k = slots.len().min((items - next) as usize);
                                for (i, s) in slots[..k].iter_mut().enumerate() {
                                    *s = ((p as u64) << 8) | (next + i as u64);
                                }
                                k
                            }) {
                                next += n as u64;
                                moved += n;
                            }
                        }
                        if polls {
                            moved += tx.take_back_with(2, |run| {
                                for &x in run.iter() {
                                    assert_eq!(x, 0x80 | ((p as u64) << 8) | back);
                                    back += 1;
                                }
                                run.len()
                            });
                        }
                        if moved == 0 {
                            thread::yield_now();
                        }
                    }
                    assert_eq!(tx.outstanding(), if polls { 0 } else { items as usize });
                    tx
                })
            })
            .collect();
        let mut next = vec![0u64; producers];
        let mut got = 0;
        while got < (0..producers).map(|p| items(p) as usize).sum::<usize>() {
            let n = rx.recv_with(usize::MAX, |run| {
                for x in run.iter_mut() {
                    let p = (*x >> 8) as usize;
                    assert_eq!(*x & 0xff, next[p], "producer {p} out of order");
                    next[p] += 1;
                    *x |= 0x80;
                }
                run.len()
            });
            got += n;
            if n == 0 {
                thread::yield_now();
            }
        }
        for (p, h) in handles.into_iter().enumerate() {
            let mut tx = h.join().unwrap();
            let mut back = if p == 0 { items(p) } else { 0 };
            while back < items(p) {
                let n = tx.take_back_with(2, |run| {
                    for &x in run.iter() {
                        assert_eq!(x, 0x80 | ((p as u64) << 8) | back);
                        back += 1;
                    }
                    run.len()
                });
                assert_ne!(n, 0, "producer {p}: handed back items not seen");
            }
            assert_eq!(tx.outstanding(), 0);
            assert!(tx.free_units() >= tx.units() - usize::from(producers == 1));
        }
        assert!(rx.is_empty());
    });
}

#[test]
fn round_trip_one_producer() {
    round_trip_model(1);
}

#[test]
fn round_trip_two_producers() {
    round_trip_model(2);
}

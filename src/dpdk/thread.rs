//! Where a thread beside the lcores runs: on a CPU no lcore uses when
//! there is one, else on the CPU it inherited at the lowest priority, so
//! that a busy side thread (the `--capture` writer) takes from the lcore
//! it shares a CPU with only what the lcore leaves, and falls behind
//! instead (its own copies are dropped and counted, see `dpdk::capture`).

/// Where [`place_side_thread`] put the calling thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Pinned to these CPUs, which no lcore uses.
    Own(Vec<usize>),
    /// No CPU is free of lcores: it stays where it was, at `nice` 19.
    Shared,
    /// The kernel refused both (the error's text): it runs as inherited.
    Unchanged(String),
}

/// The CPUs the calling thread may run on (empty if the kernel does not
/// say).
pub fn current_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most size_of::<cpu_set_t>() bytes into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of
    // the size given.
    let ret =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if ret != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: cpu < CPU_SETSIZE, `set` initialised above.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Places the calling thread: on `free_cpus` (CPUs no lcore runs on)
/// when there are any, else at nice 19 where it is.
pub fn place_side_thread(free_cpus: &[usize]) -> Placement {
    if !free_cpus.is_empty() {
        // SAFETY: as in `current_cpus`: an empty set, filled below.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in free_cpus
            .iter()
            .filter(|&&c| c < libc::CPU_SETSIZE as usize)
        {
            // SAFETY: cpu < CPU_SETSIZE.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        // SAFETY: pid 0 is the calling thread; `set` a valid cpu_set_t.
        let ret =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if ret == 0 {
            return Placement::Own(free_cpus.to_vec());
        }
    }
    // SAFETY: no preconditions; returns the calling thread's id.
    let tid = unsafe { libc::gettid() };
    // Linux applies a PRIO_PROCESS nice value given a thread id to that
    // thread alone.
    // SAFETY: plain syscall on the calling thread's id.
    let ret = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19) };
    if ret == 0 {
        Placement::Shared
    } else {
        Placement::Unchanged(std::io::Error::last_os_error().to_string())
    }
}

//! EAL lifetime and lcores: `rte_eal_init` once per process, the enabled
//! lcore set and their NUMA sockets, launching one closure on every lcore
//! (main included) and waiting for them, `rte_eal_cleanup` at the end.

use super::error::DpdkError;
use super::sys;
use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int};

/// An EAL logical core id.
pub type Lcore = u32;

/// The initialised EAL. Only one may exist per process.
pub struct Eal {
    // Keeps the argv strings alive: EAL may keep pointers into them.
    _args: Vec<CString>,
    _argv: Vec<*mut c_char>,
    /// `rte_pdump_init` succeeded: uninit before cleanup.
    pdump: bool,
    /// The CPUs the process could run on before EAL pinned its threads.
    startup_cpus: Vec<usize>,
    cleaned: bool,
}

impl Eal {
    /// Runs `rte_eal_init` with `args` (args[0] is the program name).
    /// Returns how many args EAL consumed as well.
    pub fn init(args: &[String]) -> Result<Eal, DpdkError> {
        let cargs: Vec<CString> = args
            .iter()
            .map(|a| CString::new(a.as_str()).unwrap_or_else(|_| CString::new("?").unwrap()))
            .collect();
        let mut argv: Vec<*mut c_char> = cargs.iter().map(|c| c.as_ptr() as *mut c_char).collect();
        argv.push(std::ptr::null_mut());
        let startup_cpus = super::thread::current_cpus();
        // SAFETY: argv is a NULL-terminated array of valid NUL-terminated
        // strings that outlive the EAL (kept in the returned struct). EAL may
        // permute the pointer array but does not write into the strings.
        let ret = unsafe { sys::rte_eal_init(cargs.len() as c_int, argv.as_mut_ptr()) };
        if ret < 0 {
            return Err(DpdkError::from_errno("rte_eal_init"));
        }
        Ok(Eal {
            pdump: false,
            startup_cpus,
            _args: cargs,
            _argv: argv,
            cleaned: false,
        })
    }

    /// Enabled lcores, in id order (main included).
    pub fn lcores(&self) -> Vec<Lcore> {
        (0..sys::RTE_MAX_LCORE)
            .filter(|&l| self.lcore_enabled(l))
            .collect()
    }

    pub fn lcore_enabled(&self, lcore: Lcore) -> bool {
        if lcore >= sys::RTE_MAX_LCORE {
            return false;
        }
        // SAFETY: lcore < RTE_MAX_LCORE, EAL initialised.
        unsafe { sys::rte_lcore_is_enabled(lcore) != 0 }
    }

    pub fn main_lcore(&self) -> Lcore {
        // SAFETY: EAL initialised.
        unsafe { sys::rte_get_main_lcore() }
    }

    /// The CPUs the process may use that no enabled lcore runs on (an
    /// lcore counts by its first CPU, `rte_lcore_to_cpu_id`): where a
    /// thread beside the lcores (the capture writer) can run without
    /// taking CPU time from one. Empty when the lcores use every CPU.
    pub fn side_cpus(&self) -> Vec<usize> {
        let lcore_cpus: Vec<usize> = self
            .lcores()
            .into_iter()
            // SAFETY: an enabled lcore id; EAL initialised.
            .filter_map(|l| usize::try_from(unsafe { sys::rte_lcore_to_cpu_id(l as c_int) }).ok())
            .collect();
        self.startup_cpus
            .iter()
            .copied()
            .filter(|c| !lcore_cpus.contains(c))
            .collect()
    }

    /// NUMA socket of an lcore.
    pub fn lcore_socket(&self, lcore: Lcore) -> u32 {
        // SAFETY: EAL initialised; out-of-range ids return an error value,
        // not UB.
        unsafe { sys::rte_lcore_to_socket_id(lcore) }
    }

    /// Runs `f(lcore)` on every enabled lcore, the calling (main) lcore
    /// included, and returns when all have returned.
    pub fn run_on_all_lcores<F>(&self, f: F) -> Result<(), DpdkError>
    where
        F: Fn(Lcore) + Sync,
    {
        let f_ref: &(dyn Fn(Lcore) + Sync) = &f;
        let boxed: Box<&(dyn Fn(Lcore) + Sync)> = Box::new(f_ref);
        let arg = Box::into_raw(boxed) as *mut c_void;

        unsafe extern "C" fn trampoline(arg: *mut c_void) -> c_int {
            // SAFETY: `arg` is the Box<&dyn Fn> created above, alive until
            // run_on_all_lcores has waited for every lcore; only shared
            // references are taken, and F is Sync.
            let f = unsafe { &*(arg as *const &(dyn Fn(Lcore) + Sync)) };
            // SAFETY: called on an EAL lcore.
            let lcore = unsafe { sys::rte_lcore_id() };
            f(lcore);
            0
        }

        // SAFETY: trampoline matches lcore_function_t; `arg` stays valid
        // until rte_eal_mp_wait_lcore returns (below), after which we free it.
        let ret = unsafe { sys::rte_eal_mp_remote_launch(Some(trampoline), arg, sys::CALL_MAIN) };
        // SAFETY: waits for all worker lcores launched above (a no-op for
        // those not launched).
        unsafe { sys::rte_eal_mp_wait_lcore() };
        // SAFETY: reclaims the box made above; no lcore uses it any more.
        drop(unsafe { Box::from_raw(arg as *mut &(dyn Fn(Lcore) + Sync)) });
        if ret < 0 {
            return Err(DpdkError::from_ret("rte_eal_mp_remote_launch", ret));
        }
        Ok(())
    }

    /// `rte_eal_cleanup`: releases EAL resources. Everything DPDK-owned
    /// (ports, pools, rings, socket memory) must be released first.
    pub fn cleanup(mut self) -> Result<(), DpdkError> {
        self.cleaned = true;
        self.pdump_uninit();
        // SAFETY: called once, from the main lcore, after all lcores returned.
        let ret = unsafe { sys::rte_eal_cleanup() };
        if ret < 0 {
            return Err(DpdkError::from_ret("rte_eal_cleanup", ret));
        }
        Ok(())
    }
}

impl Eal {
    /// `rte_pdump_init`: lets `dpdk-dumpcap` / `dpdk-pdump` attach as
    /// secondary processes (they need the primary's hugepage files: no
    /// --in-memory, and the same --file-prefix). A failure only warns.
    pub fn enable_pdump(&mut self) {
        if self.pdump {
            return;
        }
        // SAFETY: EAL initialised; no other preconditions.
        let ret = unsafe { sys::rte_pdump_init() };
        if ret < 0 {
            log::warn!(
                "rte_pdump_init failed ({}): dpdk-dumpcap cannot attach to this process",
                DpdkError::from_ret("rte_pdump_init", ret).text
            );
        } else {
            self.pdump = true;
            if !super::pdump::gate_in_place() {
                log::warn!(
                    "rte_mp_reply is not tqfwd's (binary linked without --export-dynamic-symbol=rte_mp_reply): a dpdk-dumpcap that detaches can crash this process (DPDK 22.11 pdump race)"
                );
            }
        }
    }

    fn pdump_uninit(&mut self) {
        if std::mem::take(&mut self.pdump) {
            // SAFETY: rte_pdump_init succeeded and is undone once, before
            // rte_eal_cleanup.
            unsafe { sys::rte_pdump_uninit() };
        }
    }
}

impl Drop for Eal {
    fn drop(&mut self) {
        if !self.cleaned {
            self.pdump_uninit();
            // SAFETY: as in cleanup(); reached on early error returns.
            unsafe { sys::rte_eal_cleanup() };
        }
    }
}

//! DPDK telemetry commands backed by Rust closures, so `dpdk-telemetry.py`
//! (and collectd/Telegraf's DPDK inputs) can read tqfwd's counters live.
//!
//! A handler returns a [`TelValue`] tree; this module turns it into
//! `rte_tel_data` on DPDK's telemetry thread. DPDK allows one level of
//! nesting (a dict of scalars inside the top dict); deeper values are
//! flattened into strings. Commands cannot be unregistered in DPDK, so a
//! handler must answer sensibly after the run ended.

use super::error::DpdkError;
use super::sys;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::sync::{Arc, Mutex};

/// A telemetry value.
#[derive(Debug, Clone, PartialEq)]
pub enum TelValue {
    U64(u64),
    Str(String),
    Dict(Vec<(String, TelValue)>),
}

type Handler = Arc<dyn Fn(&str) -> Vec<(String, TelValue)> + Send + Sync>;

static REGISTRY: Mutex<Vec<(String, Handler)>> = Mutex::new(Vec::new());

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// Fills a dict of scalars; nested dicts become "k=v,..." strings.
///
/// # Safety
/// `d` must be a valid `rte_tel_data` started as a dict.
unsafe fn fill_scalars(d: *mut sys::rte_tel_data, entries: &[(String, TelValue)]) {
    for (k, v) in entries {
        let name = cstring(k);
        match v {
            // SAFETY: valid data and C strings (caller's contract).
            TelValue::U64(x) => unsafe {
                sys::rte_tel_data_add_dict_u64(d, name.as_ptr(), *x);
            },
            TelValue::Str(s) => {
                let val = cstring(s);
                // SAFETY: as above.
                unsafe { sys::rte_tel_data_add_dict_string(d, name.as_ptr(), val.as_ptr()) };
            }
            TelValue::Dict(inner) => {
                let flat: Vec<String> = inner
                    .iter()
                    .map(|(ik, iv)| match iv {
                        TelValue::U64(x) => format!("{ik}={x}"),
                        TelValue::Str(s) => format!("{ik}={s}"),
                        TelValue::Dict(_) => format!("{ik}=..."),
                    })
                    .collect();
                let val = cstring(&flat.join(","));
                // SAFETY: as above.
                unsafe { sys::rte_tel_data_add_dict_string(d, name.as_ptr(), val.as_ptr()) };
            }
        }
    }
}

unsafe extern "C" fn on_command(
    cmd: *const c_char,
    params: *const c_char,
    info: *mut sys::rte_tel_data,
) -> c_int {
    // SAFETY: DPDK passes NUL-terminated strings (params may be NULL).
    let cmd = unsafe { CStr::from_ptr(cmd) }
        .to_string_lossy()
        .into_owned();
    let params = if params.is_null() {
        String::new()
    } else {
        // SAFETY: as above.
        unsafe { CStr::from_ptr(params) }
            .to_string_lossy()
            .into_owned()
    };
    let handler = REGISTRY
        .lock()
        .ok()
        .and_then(|r| r.iter().find(|(c, _)| *c == cmd).map(|(_, h)| h.clone()));
    let Some(handler) = handler else {
        return -libc::EINVAL;
    };
    let entries = handler(&params);
    // SAFETY: `info` is the response object DPDK gave us; children are
    // allocated with rte_tel_data_alloc and handed over with keep = 0 (DPDK
    // copies and frees them).
    unsafe {
        sys::rte_tel_data_start_dict(info);
        for (k, v) in &entries {
            let name = cstring(k);
            match v {
                TelValue::Dict(inner) => {
                    let child = sys::rte_tel_data_alloc();
                    if child.is_null() {
                        continue;
                    }
                    sys::rte_tel_data_start_dict(child);
                    fill_scalars(child, inner);
                    sys::rte_tel_data_add_dict_container(info, name.as_ptr(), child, 0);
                }
                other => fill_scalars(info, &[(k.clone(), other.clone())]),
            }
        }
    }
    0
}

/// Registers (or replaces the handler of) the telemetry command `cmd`.
pub fn register(
    cmd: &str,
    help: &str,
    handler: impl Fn(&str) -> Vec<(String, TelValue)> + Send + Sync + 'static,
) -> Result<(), DpdkError> {
    let mut reg = REGISTRY.lock().map_err(|_| DpdkError {
        call: "telemetry".into(),
        code: 0,
        text: "registry poisoned".into(),
    })?;
    if let Some(slot) = reg.iter_mut().find(|(c, _)| c == cmd) {
        slot.1 = Arc::new(handler);
        return Ok(());
    }
    // DPDK keeps the pointers: the strings live for the process.
    let c_cmd: &'static CStr = Box::leak(cstring(cmd).into_boxed_c_str());
    let c_help: &'static CStr = Box::leak(cstring(help).into_boxed_c_str());
    // SAFETY: static strings and a callback with the telemetry_cb signature.
    let ret = unsafe {
        sys::rte_telemetry_register_cmd(c_cmd.as_ptr(), Some(on_command), c_help.as_ptr())
    };
    if ret != 0 {
        return Err(DpdkError::from_ret(
            format!("rte_telemetry_register_cmd({cmd})"),
            ret,
        ));
    }
    reg.push((cmd.to_string(), Arc::new(handler)));
    Ok(())
}

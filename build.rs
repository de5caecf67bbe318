//! Finds DPDK (libdpdk via pkg-config), generates the FFI bindings with
//! bindgen, and compiles out-of-line wrappers for DPDK's `static inline`
//! fast-path functions (`rte_eth_rx_burst`, `rte_ring_enqueue_burst`, ...)
//! plus `src/dpdk/shim.c`.

use std::env;
use std::path::PathBuf;
use std::process::Command;

const INSTALL_HINT: &str =
    "apt-get update && apt-get install -y dpdk dpdk-dev libdpdk-dev pkg-config clang libclang-dev";

fn fail(msg: &str) -> ! {
    // One line, saying what to run.
    eprintln!("error: {msg}");
    println!("cargo:warning={msg}");
    std::process::exit(1);
}

fn pkg_config(args: &[&str]) -> String {
    let out = Command::new("pkg-config")
        .args(args)
        .arg("libdpdk")
        .output()
        .unwrap_or_else(|_| {
            fail(&format!(
                "pkg-config not found; install DPDK with: {INSTALL_HINT}"
            ))
        });
    if !out.status.success() {
        fail(&format!(
            "libdpdk (DPDK 22.11 headers) not found by pkg-config; install it with: {INSTALL_HINT}"
        ));
    }
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn main() {
    println!("cargo:rerun-if-changed=src/dpdk/wrapper.h");
    println!("cargo:rerun-if-changed=src/dpdk/shim.c");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let version = pkg_config(&["--modversion"]);
    if !version.starts_with("22.") && !version.starts_with("23.") {
        println!("cargo:warning=tqfwd is written for DPDK 22.11; found {version}");
    }
    let cflags: Vec<String> = pkg_config(&["--cflags"])
        .split_whitespace()
        .map(String::from)
        .collect();
    let libs: Vec<String> = pkg_config(&["--libs"])
        .split_whitespace()
        .map(String::from)
        .collect();

    // The pdump reply gate (src/dpdk/pdump.rs): the binaries export
    // shim.c's rte_mp_reply so that librte_pdump's call binds to it.
    println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol=rte_mp_reply");

    for flag in &libs {
        if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        } else if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if flag.starts_with("-Wl,") {
            println!("cargo:rustc-link-arg={flag}");
        }
    }

    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let wrap_c = out.join("dpdk_static_fns");

    // Clang args: the pkg-config cflags (include dirs, `-include rte_config.h`,
    // -march) minus linker-only bits.
    let clang_args: Vec<String> = cflags
        .iter()
        .filter(|f| !f.starts_with("-Wl"))
        .cloned()
        .collect();

    let bindings = bindgen::Builder::default()
        .header("src/dpdk/wrapper.h")
        .clang_args(&clang_args)
        .allowlist_function("rte_.*|tqfwd_.*")
        .allowlist_type("rte_.*")
        .allowlist_var("RTE_.*|rte_.*|RING_F_.*|SOCKET_ID_ANY|tqfwd_.*")
        // Packed structs holding aligned ones: Rust refuses them.
        .opaque_type("rte_l2tpv2_.*")
        .opaque_type("rte_gtp_.*")
        .opaque_type("rte_arp_hdr")
        .opaque_type("rte_arp_ipv4")
        .derive_default(true)
        .derive_debug(false)
        .layout_tests(false)
        .generate_comments(false)
        .prepend_enum_name(false)
        .wrap_static_fns(true)
        .wrap_static_fns_path(&wrap_c)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .unwrap_or_else(|e| fail(&format!("bindgen failed on DPDK headers ({e}); install clang and libclang-dev: {INSTALL_HINT}")));
    bindings
        .write_to_file(out.join("dpdk_bindings.rs"))
        .expect("write bindings");

    let mut build = cc::Build::new();
    build
        .file(wrap_c.with_extension("c"))
        .file("src/dpdk/shim.c")
        .include("src/dpdk")
        .include(".");
    for f in &clang_args {
        build.flag(f);
    }
    build.flag("-O3").warnings(false).compile("tqfwd_dpdk_shim");
}

//! `--config FILE`: the file's options and EAL arguments apply to a real
//! run, the command line replaces single keys; bad files are one-line usage
//! errors naming key and file; `--completions` / `--man` need no EAL.

use crate::common::*;
use std::path::Path;
use std::time::Duration;

/// A usage error found before EAL starts (common::assert_usage_error,
/// and EAL printed nothing).
fn assert_pre_eal_usage_error(run: &Run, needles: &[&str]) {
    assert_usage_error(run, needles);
    assert!(
        !run.stderr.contains("EAL:"),
        "EAL started\n{}",
        run.describe()
    );
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write config");
    p.to_string_lossy().into_owned()
}

/// The file sets backend, depth, latency, the vdevs and the JSON path; the
/// command line replaces burst. The report of a real net_null run shows
/// the file's values and the command line's burst.
#[test]
fn file_applies_and_command_line_overrides() {
    let _g = serial();
    let dir = scratch("cfgfile");
    let json = dir.join("from-file.json");
    let cfg = write(
        &dir,
        "run.toml",
        &format!(
            "eal = [\"--vdev=net_null0,size=64\", \"--vdev=net_null1,size=64\"]\n\
             backend = \"ring\"\nburst = 64\ndepth = 1024\nlatency = true\n\
             duration = 1\nstats-interval = 0\nstats-json = \"{}\"\n",
            json.display()
        ),
    );
    let mut args = vec!["--config".to_string(), cfg];
    args.extend(eal_args("0-1", &[]));
    args.extend(["--".into(), "--burst".into(), "16".into()]);
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let mut run = run_raw(&refs, Duration::from_secs(60));
    run.json = std::fs::read_to_string(&json)
        .ok()
        .map(|s| serde_json::from_str(&s).expect("valid JSON"));
    assert_clean_end(&run);
    let j = run.json();
    assert_eq!(j["backend"], "ring", "file's backend");
    assert_eq!(j["burst"], 16, "command line's burst");
    assert_eq!(j["depth"], 1024, "file's depth");
    assert!(j.get("latency_ns").is_some(), "file's latency flag");
    assert_eq!(j["ports"].as_array().map(Vec::len), Some(2), "file's vdevs");
    assert!(j["tx_packets"].as_u64().unwrap() > 0, "{}", run.describe());
}

#[test]
fn bad_files_are_usage_errors_naming_key_and_file() {
    let dir = scratch("cfgbad");
    let unknown = write(&dir, "unknown.toml", "burst = 32\nbursts = 64\n");
    let run = run_raw(&["--config", &unknown], Duration::from_secs(10));
    assert_pre_eal_usage_error(&run, &["'bursts'", &unknown, "line 2", "unknown key"]);

    let wrong_type = write(&dir, "type.toml", "latency = \"yes\"\n");
    let run = run_raw(&["--", "--config", &wrong_type], Duration::from_secs(10));
    assert_pre_eal_usage_error(&run, &["'latency'", &wrong_type, "line 1"]);

    let bad_value = write(&dir, "value.toml", "\n\nburst = 1000\n");
    let run = run_raw(&["--config", &bad_value], Duration::from_secs(10));
    assert_pre_eal_usage_error(&run, &["'burst'", &bad_value, "line 3", "1000"]);

    let not_toml = write(&dir, "syntax.toml", "burst = = 3\n");
    let run = run_raw(&["--config", &not_toml], Duration::from_secs(10));
    assert_pre_eal_usage_error(&run, &[&not_toml, "line 1"]);

    let missing = dir.join("missing.toml").to_string_lossy().into_owned();
    let run = run_raw(&["--config", &missing], Duration::from_secs(10));
    assert_pre_eal_usage_error(&run, &[&missing]);
}

/// Every shipped preset is a valid config file (`--help` after a good
/// file prints help; a bad one would be a usage error first).
#[test]
fn shipped_presets_load() {
    let presets = Path::new(env!("CARGO_MANIFEST_DIR")).join("dpdk-config");
    let mut n = 0;
    for e in std::fs::read_dir(presets).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let p = p.to_string_lossy().into_owned();
            let run = run_raw(&["--config", &p, "--", "--help"], Duration::from_secs(10));
            assert_eq!(run.code(), 0, "{p}: {}", run.describe());
            assert!(run.stdout.contains("--config"), "{p}");
            n += 1;
        }
    }
    assert!(n >= 6, "only {n} presets");
}

#[test]
fn completions_and_man_page_need_no_eal() {
    for args in [
        &["--", "--completions", "bash"][..],
        &["--completions", "bash"],
    ] {
        let run = run_raw(args, Duration::from_secs(10));
        assert_eq!(run.code(), 0, "{args:?}: {}", run.describe());
        assert!(run.stdout.contains("--backend"), "{args:?}");
        assert!(run.stdout.contains("--config"), "{args:?}");
        assert!(!run.stderr.contains("EAL:"), "{args:?}: EAL started");
    }
    for shell in ["zsh", "fish"] {
        let run = run_raw(&["--completions", shell], Duration::from_secs(10));
        assert_eq!(run.code(), 0, "{shell}: {}", run.describe());
        assert!(run.stdout.contains("backend"), "{shell}");
    }
    for args in [&["--", "--man"][..], &["--man"]] {
        let run = run_raw(args, Duration::from_secs(10));
        assert_eq!(run.code(), 0, "{args:?}: {}", run.describe());
        assert!(run.stdout.contains(".TH tqfwd 8 "), "{args:?}: section 8");
        // roff spells `--backend` with escaped dashes
        assert!(run.stdout.contains(r"\-\-backend"), "{args:?}");
        assert!(!run.stderr.contains("EAL:"), "{args:?}: EAL started");
    }
    let run = run_raw(&["--completions", "tcsh"], Duration::from_secs(10));
    assert_eq!(run.code(), 2, "{}", run.describe());
}

/// A man page or script that cannot be written (a full disk) is one error
/// line and exit 1, not a panic.
#[test]
fn generated_text_to_a_full_disk_is_one_line() {
    let full = std::fs::File::options().write(true).open("/dev/full");
    let Ok(full) = full else {
        return skip_test("generated_text_to_a_full_disk_is_one_line", "no /dev/full");
    };
    let out = std::process::Command::new(bin())
        .arg("--man")
        .stdout(full)
        .output()
        .expect("run tqfwd");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("tqfwd: error: stdout:"), "{err}");
}

/// EAL arguments are the file's, then the command line's: an option DPDK
/// refuses twice (`-l` in both) is exit 2 pointing at the file.
#[test]
fn eal_option_in_file_and_command_line_names_the_file() {
    let _g = serial();
    let dir = scratch("cfgeal");
    let cfg = write(&dir, "eal.toml", "eal = [\"-l\", \"0-1\"]\n");
    let mut args = vec!["--config".to_string(), cfg.clone()];
    args.extend(eal_args("0", &["net_null0".to_string()]));
    args.extend(["--".into(), "--duration".into(), "1".into()]);
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let run = run_raw(&refs, Duration::from_secs(30));
    assert_usage_error(&run, &["tqfwd: error: EAL initialisation failed", &cfg]);
}

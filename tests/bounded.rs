//! Files tqfwd reads and writes, at their edges: a `--config` that cannot
//! end (`/dev/zero`, a FIFO) or is huge is exit 2 naming the file and the
//! limit, at once; two outputs naming one file are exit 2 before EAL
//! naming both options; a run refused after EAL leaves no file it created
//! and no existing file emptied; files tqfwd creates are not
//! world-writable even under `umask 0`.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

/// Two net_null ports: EAL arguments as strings.
fn null_eal() -> Vec<String> {
    eal_args(
        "0-1",
        &["net_null0,size=64".into(), "net_null1,size=64".into()],
    )
}

fn with_app<'a>(eal: &'a [String], app: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = eal.iter().map(|s| s.as_str()).collect();
    v.push("--");
    v.extend_from_slice(app);
    v
}

#[test]
fn config_that_cannot_end_or_is_huge_is_refused_at_once() {
    let dir = scratch("bounded-config");
    let fifo = dir.join("fifo.toml");
    mkfifo(&fifo);
    let big = dir.join("big.toml");
    // Valid TOML (comments) past the limit: only the size is wrong.
    std::fs::write(&big, "# padding\n".repeat(210_000)).unwrap();
    for (path, needles) in [
        (
            "/dev/zero",
            vec!["--config /dev/zero", "character device", "regular file"],
        ),
        (
            fifo.to_str().unwrap(),
            vec![fifo.to_str().unwrap(), "FIFO", "regular file"],
        ),
        (big.to_str().unwrap(), vec![big.to_str().unwrap(), "1 MiB"]),
    ] {
        let run = run_raw(
            &["--config", path, "--", "--duration", "1"],
            Duration::from_secs(10),
        );
        assert_usage_error(&run, &needles);
        assert!(
            run.elapsed < Duration::from_secs(2),
            "{path}: {:?}",
            run.elapsed
        );
        assert!(
            !run.stderr.contains("EAL:"),
            "before EAL\n{}",
            run.describe()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_file_named_by_two_outputs_is_refused_before_eal() {
    let _g = serial();
    let dir = scratch("bounded-same");
    let same = dir.join("same.pcapng");
    let same_s = same.to_str().unwrap().to_string();
    let dotted = format!("{}/./same.pcapng", dir.display());
    let json = dir.join("stats.json");
    let json_s = json.to_str().unwrap().to_string();
    let eal = null_eal();
    let cap0 = format!("0:{same_s}");
    let cap1 = format!("1:{dotted}");
    let cap_json = format!("1:{json_s}");
    for (app, needles) in [
        (
            vec!["--capture", cap0.as_str(), "--capture", cap1.as_str()],
            vec![
                format!("--capture {cap0}"),
                format!("--capture {cap1}"),
                "same file".to_string(),
            ],
        ),
        (
            vec![
                "--capture",
                cap_json.as_str(),
                "--stats-json",
                json_s.as_str(),
            ],
            vec![
                format!("--capture {cap_json}"),
                format!("--stats-json {json_s}"),
                "same file".to_string(),
            ],
        ),
    ] {
        let mut args = with_app(&eal, &app);
        args.extend(["--duration", "1", "--capture-count", "10"]);
        let run = run_raw(&args, Duration::from_secs(30));
        let needles: Vec<&str> = needles.iter().map(|s| s.as_str()).collect();
        assert_usage_error(&run, &needles);
        assert!(
            !run.stderr.contains("EAL:"),
            "before EAL\n{}",
            run.describe()
        );
        assert!(!same.exists() && !json.exists(), "nothing created");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_refused_after_eal_leaves_no_file_behind() {
    let _g = serial();
    let dir = scratch("bounded-left");
    let created = dir.join("x.pcapng");
    let kept = dir.join("kept.pcapng");
    std::fs::write(&kept, "an earlier capture").unwrap();
    let eal = null_eal();
    let c7 = format!("7:{}", created.display());
    let c0 = format!("0:{}", kept.display());
    let run = run_tqfwd(
        &dir,
        &eal,
        &["--capture", &c0, "--capture", &c7, "--duration", "1"],
        Duration::from_secs(30),
    );
    // Port 7 is found missing only once EAL has probed the two ports.
    assert_usage_error(&run, &["--capture names port 7"]);
    assert!(!created.exists(), "{} left behind", created.display());
    assert!(!dir.join("stats.json").exists(), "stats.json left behind");
    assert_eq!(
        std::fs::read_to_string(&kept).unwrap(),
        "an earlier capture",
        "an existing file is not emptied by a run that never captured"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn created_files_are_not_world_writable_under_umask_0() {
    let _g = serial();
    let dir = scratch("bounded-mode");
    let cap = dir.join("c.pcapng");
    let json = dir.join("s.json");
    let eal = null_eal();
    let c0 = format!("0:{}", cap.display());
    let args = with_app(
        &eal,
        &[
            "--capture",
            &c0,
            "--capture-count",
            "100",
            "--duration",
            "1",
            "--stats-json",
            json.to_str().unwrap(),
        ],
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg("umask 0 && exec \"$0\" \"$@\"")
        .arg(bin())
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cap), 0o640, "capture file: packets are nobody else's");
    assert_eq!(mode(&json), 0o644, "stats JSON");
    assert!(
        std::fs::metadata(&cap).unwrap().len() > 100,
        "frames written"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

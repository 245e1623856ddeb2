//! The build says what it needs: built without `--cfg madsim` (an environment RUSTFLAGS
//! such as `-C target-cpu=native` replaces `.cargo/config.toml`'s flags), the `sim`
//! binary stops the build with one message that says why and how to fix it, instead of
//! errors deep inside madsim's API.
//!
//! Methodology: rustc compiles sim's `main.rs` as cargo would without the flag. Without
//! `--cfg madsim` nothing in it needs another crate, so this takes a fraction of a
//! second; with the flag it goes on to its real imports, which rustc alone cannot find,
//! and the message must not appear.

use std::process::Command;

fn compile_main(cfg_madsim: bool) -> String {
    let dir = std::env::temp_dir().join(format!(
        "baton-build-flags-{}-{cfg_madsim}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let main = format!("{}/src/main.rs", env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()));
    cmd.args([
        "--edition",
        "2021",
        "--crate-type",
        "bin",
        "--check-cfg",
        "cfg(madsim)",
    ])
    .arg("--out-dir")
    .arg(&dir)
    .arg(&main);
    if cfg_madsim {
        cmd.args(["--cfg", "madsim"]);
    }
    let o = cmd.output().expect("rustc runs");
    assert!(!o.status.success(), "main.rs alone cannot build either way");
    std::fs::remove_dir_all(&dir).unwrap();
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn without_cfg_madsim_the_build_stops_with_one_message_naming_the_fix() {
    let err = compile_main(false);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 2, "the message and rustc's count: {err}");
    let message = errors[0];
    for needed in [
        "must be built with `--cfg madsim`",
        "environment RUSTFLAGS",
        "replaces the config's flags",
        "RUSTFLAGS=\"--cfg madsim",
    ] {
        assert!(message.contains(needed), "{needed:?} in {message}");
    }
    assert!(errors[1].contains("1 previous error"), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let with_flag = compile_main(true);
    assert!(!with_flag.contains("must be built with"), "{with_flag}");
}

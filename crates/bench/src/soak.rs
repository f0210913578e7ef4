//! `pearl-bench soak`: the one-hour soak of issue 16 runs FRR, BGP speakers, hosts and pearld
//! together for minutes, which the system tests' Python helpers already drive; this subcommand
//! runs `bench/soak.py` from the source tree with the same arguments and passes its exit code on.

use std::path::PathBuf;
use std::process::Command;

pub fn run(argv: &[String]) -> Result<(), String> {
    let script = std::env::var_os("PEARL_SOAK_SCRIPT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/soak.py"));
    if !script.is_file() {
        return Err(format!(
            "{}: the soak script is not there (it runs from a source tree; PEARL_SOAK_SCRIPT names another)",
            script.display()
        ));
    }
    let bin = std::env::current_exe().map_err(|e| format!("locating pearl-bench: {e}"))?;
    let mut args: Vec<String> = argv.to_vec();
    if !args.iter().any(|a| a == "--bin" || a.starts_with("--bin=")) {
        args.extend(["--bin".into(), bin.parent().unwrap_or(&bin).display().to_string()]);
    }
    let status =
        Command::new("python3").arg(&script).args(&args).status().map_err(|e| format!("running python3 {}: {e}", script.display()))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => Err(format!("the soak failed (exit code {code}); its last line says what held and what did not")),
        None => Err("the soak was killed".into()),
    }
}

//! The run's figures: bench/eval_plot.py draws them (matplotlib), and each must come back a
//! well-formed PNG, which is what `--quick` checks (the numbers are the machine's business).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The plotting script, carried in the binary so that the command runs from anywhere.
const SCRIPT: &str = include_str!("../../../../bench/eval_plot.py");

/// (file, what it shows) of every figure the script draws.
pub const FIGURES: &[(&str, &str)] = &[
    ("throughput.png", "NDR and PDR against frame size, PEARL's fast VR and the kernel router, the rig's own limit"),
    ("forwarded_vs_offered.png", "forwarded against offered (log-log), every trial of the searches, one panel per frame size"),
];

/// Draws every figure from `results` into `out`; fails naming the first that is missing or not a PNG.
pub fn draw(results: &Path, out: &Path) -> Result<Vec<PathBuf>, String> {
    let done = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(results)
        .arg(out)
        .output()
        .map_err(|e| format!("python3 (bench/eval_plot.py): {e}"))?;
    if !done.status.success() {
        let err = String::from_utf8_lossy(&done.stderr);
        let hint = if err.contains("No module named 'matplotlib'") {
            " (pip install matplotlib, or apt-get install python3-matplotlib)"
        } else {
            ""
        };
        return Err(format!("bench/eval_plot.py: {}{hint}", err.trim()));
    }
    FIGURES.iter().map(|(name, _)| out.join(name)).map(|p| check_png(&p).map(|()| p)).collect()
}

/// A PNG's signature, a non-empty IHDR first and an IEND last.
pub fn check_png(path: &Path) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("figure {}: {e}", path.display()))?;
    let bad = |why: &str| Err(format!("figure {}: {why}", path.display()));
    // The signature, then IHDR: 4 bytes of length, 4 of type, 13 of data, 4 of CRC.
    if !bytes.starts_with(b"\x89PNG\r\n\x1a\n") || bytes.len() < 8 + 25 {
        return bad("not a PNG");
    }
    let (width, height) =
        (u32::from_be_bytes(bytes[16..20].try_into().expect("4 bytes")), u32::from_be_bytes(bytes[20..24].try_into().expect("4 bytes")));
    if &bytes[12..16] != b"IHDR" || width == 0 || height == 0 {
        return bad("no image header, or an empty image");
    }
    if bytes.len() < 8 + 25 + 12 || &bytes[bytes.len() - 8..bytes.len() - 4] != b"IEND" {
        return bad("truncated (no IEND chunk)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_or_foreign_file_is_not_taken_for_a_figure() {
        let dir = std::env::temp_dir().join(format!("eval-png-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x10\0\0\0\x10\x08\x02\0\0\0\0\0\0\0".to_vec();
        png.extend_from_slice(b"\0\0\0\0IEND\xae\x42\x60\x82");
        let path = dir.join("f.png");
        std::fs::write(&path, &png).expect("written");
        assert_eq!(check_png(&path), Ok(()));
        std::fs::write(&path, &png[..png.len() - 4]).expect("written");
        assert!(check_png(&path).expect_err("truncated").contains("truncated"));
        std::fs::write(&path, b"<svg/>").expect("written");
        assert!(check_png(&path).expect_err("not a PNG").contains("not a PNG"));
        std::fs::remove_dir_all(&dir).expect("removed");
    }
}

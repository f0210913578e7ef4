//! A VR's cgroup on this machine's hierarchies (needs root): the limits land in the files, a
//! process moved in is listed and killed on removal, and nothing is left behind.

use pearl_vrproc::Cgroup;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

fn name(suffix: &str) -> String {
    format!("frr{}{suffix}", std::process::id() % 100_000)
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok().map(|s| s.trim().to_string())
}

#[test]
fn limits_show_in_the_files_and_removal_kills_what_is_inside() {
    let vr = name("c");
    let cg = Cgroup::create(&vr, 150, 64 << 20).unwrap();
    let (mut cpu, mut memory) = (0, 0);
    for dir in cg.dirs() {
        assert!(dir.ends_with(format!("pearl/{vr}")), "{}", dir.display());
        if let Some(q) = read(dir, "cpu.cfs_quota_us") {
            assert_eq!((q.as_str(), read(dir, "cpu.cfs_period_us").as_deref()), ("150000", Some("100000")));
            cpu += 1;
        }
        if let Some(m) = read(dir, "cpu.max") {
            assert_eq!(m, "150000 100000");
            cpu += 1;
        }
        if let Some(m) = read(dir, "memory.limit_in_bytes").or_else(|| read(dir, "memory.max")) {
            assert_eq!(m, (64u64 << 20).to_string());
            memory += 1;
        }
    }
    assert_eq!((cpu, memory), (1, 1), "one hierarchy carries each limit: {:?}", cg.dirs());

    let mut child = Command::new("sleep").arg("60").spawn().unwrap();
    cg.add(child.id()).unwrap();
    assert_eq!(cg.pids().unwrap(), [child.id()]);
    let own = std::fs::read_to_string(format!("/proc/{}/cgroup", child.id())).unwrap();
    assert_eq!(own.lines().filter(|l| l.ends_with(&format!("/pearl/{vr}"))).count(), cg.dirs().len(), "{own}");

    let dirs = cg.dirs().to_vec();
    cg.remove().unwrap();
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    for d in dirs {
        assert!(!d.exists(), "{} is still there", d.display());
    }
}

#[test]
fn dropping_removes_too_and_bad_names_are_refused() {
    let vr = name("d");
    let dirs = Cgroup::create(&vr, 100, 512 << 20).unwrap().dirs().to_vec();
    assert!(!dirs.is_empty());
    for d in dirs {
        assert!(!d.exists(), "{} is still there", d.display());
    }
    for bad in ["", "a/b", ".."] {
        assert!(Cgroup::create(bad, 100, 1 << 30).is_err(), "{bad:?}");
    }
}

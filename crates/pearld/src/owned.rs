//! Which network namespaces are PEARL's: a registry beside the API socket recording, for each
//! VR namespace pearld made, the namespace's inode, what runs its control plane and the VR's
//! interfaces. A name alone proves
//! nothing (a lab host's namespace may carry a VR's name); the inode does, for as long as the
//! namespace lives, and the boot it was recorded in voids the registry after a reboot (inode
//! numbers are reused across boots, and /run/netns is gone by then anyway). It survives pearld
//! so that the next pearld adopts its VRs and removes the ones no longer wanted, and refuses to
//! touch anything else.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One VR namespace PEARL made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub inode: u64,
    /// The suite that runs its control plane (`frr`, `bird`, `command`), `-` for none: whose
    /// files PEARL made for it.
    pub suite: String,
    pub interfaces: Vec<String>,
}

/// namespace NAME exists and is not PEARL's (PEARL makes a namespace of each VR's name and
/// never takes one it did not make)
#[derive(Debug, thiserror::Error)]
#[error("namespace {0} exists and is not PEARL's (PEARL makes a namespace of each VR's name and never takes one it did not make)")]
pub struct NotOurs(String);

pub struct Owned {
    path: PathBuf,
    boot: String,
    /// Namespace name → what PEARL made for it.
    entries: Mutex<BTreeMap<String, Entry>>,
}

/// Where pearld keeps the registry of the node whose API is `api_socket`.
pub fn path_for(api_socket: &str) -> PathBuf {
    PathBuf::from(format!("{api_socket}.owned"))
}

fn netns_inode(name: &str) -> Option<u64> {
    std::fs::metadata(format!("/run/netns/{name}")).ok().map(|m| m.ino())
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

impl Owned {
    /// Reads the registry at `path` (none yet: empty). Entries of another boot are dropped.
    pub fn open(path: &Path) -> io::Result<Owned> {
        let boot = boot_id();
        let mut entries = BTreeMap::new();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let mut lines = text.lines();
                if lines.next() == Some(&format!("boot {boot}")) {
                    for line in lines {
                        let mut words = line.split(' ');
                        let (Some(name), Some(Ok(inode)), Some(suite)) = (words.next(), words.next().map(str::parse), words.next()) else {
                            continue;
                        };
                        let entry = Entry { inode, suite: suite.to_string(), interfaces: words.map(str::to_string).collect() };
                        entries.insert(name.to_string(), entry);
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
        Ok(Owned { path: path.to_path_buf(), boot, entries: Mutex::new(entries) })
    }

    /// Whether namespace `name` is one pearld made (and still the same namespace).
    pub fn is_ours(&self, name: &str) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.get(name).is_some_and(|e| netns_inode(name) == Some(e.inode))
    }

    /// Refuses a VR name that is a namespace pearld did not make.
    pub fn check_free(&self, name: &str) -> Result<(), NotOurs> {
        if std::path::Path::new(&format!("/run/netns/{name}")).exists() && !self.is_ours(name) {
            return Err(NotOurs(name.to_string()));
        }
        Ok(())
    }

    /// Records namespace `name`, just made, as PEARL's, with its VR's control-plane `suite`
    /// (`-` for none) and `interfaces`.
    pub fn record(&self, name: &str, suite: &str, interfaces: &[String]) -> io::Result<()> {
        let inode = netns_inode(name).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("/run/netns/{name}: gone")))?;
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.insert(name.to_string(), Entry { inode, suite: suite.to_string(), interfaces: interfaces.to_vec() });
        self.write(&entries)
    }

    /// Forgets namespace `name` (removed).
    pub fn forget(&self, name: &str) -> io::Result<()> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.remove(name).is_none() {
            return Ok(());
        }
        self.write(&entries)
    }

    /// The namespaces pearld made that still live, with what was made for them.
    pub fn live(&self) -> Vec<(String, Entry)> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.iter().filter(|(name, e)| netns_inode(name) == Some(e.inode)).map(|(n, e)| (n.clone(), e.clone())).collect()
    }

    /// By way of a renamed temporary: a pearld killed while writing leaves the old registry.
    fn write(&self, entries: &BTreeMap<String, Entry>) -> io::Result<()> {
        let mut text = format!("boot {}\n", self.boot);
        for (name, e) in entries {
            text += &format!("{name} {} {}", e.inode, e.suite);
            for i in &e.interfaces {
                text += &format!(" {i}");
            }
            text.push('\n');
        }
        let staged = self.path.with_extension("owned.new");
        let at = |p: &Path, e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
        std::fs::write(&staged, text).map_err(|e| at(&staged, e))?;
        std::fs::rename(&staged, &self.path).map_err(|e| at(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry read back holds what was recorded, but a namespace of a recorded name that is
    /// not the one recorded (here: none at all) is not ours.
    #[test]
    fn only_the_recorded_namespace_is_ours_and_the_registry_survives() {
        let dir = std::env::temp_dir().join(format!("pearld-owned-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("api.owned");
        let owned = Owned::open(&path).expect("empty");
        let mut entries = BTreeMap::new();
        let entry = Entry { inode: 12345, suite: "frr".to_string(), interfaces: vec!["eth0".to_string(), "eth1".to_string()] };
        entries.insert("vr-gone".to_string(), entry.clone());
        owned.write(&entries).expect("written");
        let again = Owned::open(&path).expect("read");
        assert_eq!(again.entries.lock().unwrap().get("vr-gone"), Some(&entry));
        assert!(!again.is_ours("vr-gone"), "no such namespace lives");
        assert!(again.live().is_empty());
        std::fs::write(&path, "boot another-boot\nvr-gone 12345 - eth0\n").expect("written");
        assert!(Owned::open(&path).expect("read").entries.lock().unwrap().is_empty(), "another boot's entries are void");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

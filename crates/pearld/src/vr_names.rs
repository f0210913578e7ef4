//! The VRs of the configuration in force by name, for `GET /v1/vrs/NAME` and the calls that
//! change one VR: at thousands of VRs a search of the list on every call cost more than the rest
//! of the call. Built once per published `NodeView` (a change may remove or rename any VR, and
//! readers must not wait for a change), it holds the VRs' own `Arc`s, so building it copies
//! no names.

use pearl_control::VrConfig;
use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

pub struct VrNames(HashSet<Named>);

impl VrNames {
    pub fn of(vrs: &[Arc<VrConfig>]) -> VrNames {
        let mut names = HashSet::with_capacity(vrs.len());
        for vr in vrs {
            // Replaced rather than kept: of two VRs of one name (refused by validation) the
            // last is found, as the search of the list from its end found it.
            names.replace(Named(Arc::clone(vr)));
        }
        VrNames(names)
    }

    pub fn get(&self, name: &str) -> Option<&Arc<VrConfig>> {
        self.0.get(name).map(|n| &n.0)
    }
}

/// A VR hashed and compared by its name alone, so the set is looked up by a `&str`.
struct Named(Arc<VrConfig>);

impl Hash for Named {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As `str` hashes, which `Borrow<str>` requires.
        self.0.name.as_str().hash(state);
    }
}

impl PartialEq for Named {
    fn eq(&self, other: &Named) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Named {}

impl Borrow<str> for Named {
    fn borrow(&self) -> &str {
        &self.0.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vrs() -> Vec<Arc<VrConfig>> {
        let config = pearl_control::parse_config(
            r#"
ports: [{name: p0, interface: a}]
vrs:
  - {name: red, interfaces: [{name: eth0, port: p0, mac: "02:00:00:00:01:00"}]}
  - {name: blue, interfaces: [{name: eth0, port: p0, mac: "02:00:00:00:02:00"}]}
  - {name: green, interfaces: [{name: eth0, port: p0, mac: "02:00:00:00:03:00"}]}
"#,
        )
        .unwrap();
        config.vrs.clone()
    }

    fn renamed(vr: &VrConfig, name: &str, id: u16) -> Arc<VrConfig> {
        Arc::new(VrConfig { name: name.into(), id, ..vr.clone() })
    }

    /// Every VR of `vrs` is found by its name, as itself; `gone` are not found.
    fn finds_exactly(vrs: &[Arc<VrConfig>], gone: &[&str]) {
        let names = VrNames::of(vrs);
        for vr in vrs {
            let found = names.get(&vr.name).unwrap_or_else(|| panic!("{} not found", vr.name));
            assert!(Arc::ptr_eq(found, vr), "{} found as {} (id {})", vr.name, found.name, found.id);
        }
        for name in gone {
            assert!(names.get(name).is_none(), "{name} found");
        }
    }

    #[test]
    fn a_lookup_finds_the_vr_of_that_name_after_adds_removes_and_renames() {
        let mut vrs = vrs();
        finds_exactly(&vrs, &["yellow"]);
        vrs.push(renamed(&vrs[0], "yellow", 10));
        finds_exactly(&vrs, &[]);
        // Removing one moves those after it up the list.
        vrs.remove(0);
        finds_exactly(&vrs, &["red"]);
        vrs[1] = renamed(&vrs[1], "red", vrs[1].id);
        finds_exactly(&vrs, &["green"]);
        // A name given up by one VR and taken by another.
        vrs[0] = renamed(&vrs[0], "green", vrs[0].id);
        vrs[2] = renamed(&vrs[2], "blue", vrs[2].id);
        finds_exactly(&vrs, &["yellow"]);
        assert_eq!(VrNames::of(&vrs).get("blue").unwrap().id, 10);
    }
}

//! A change lands whole or changes nothing: every change path (`PUT /v1/config` and each VR,
//! route, filter, queue, impairment, limits and plugin endpoint) goes through `land`, which
//! makes the edit, validates it, hands it to the node, and takes it back — from the document
//! and from the stored state, which the node writes ahead of applying — when anything refuses
//! or panics. A panic is a bug, but one inside a change must not leave a refused change in
//! `GET` answers or on disk, where the next start would apply it.

use crate::desired::{ChangeError, Desired, Edit, Undo};
use pearl_control::Config;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Makes `edit` to `desired`'s document, validates it against `running` (what the document
/// configured before) and lands it with `apply`, which stores the change (`Desired::store`)
/// and applies it to the node. Returns how to take the change back, for the caller to drop
/// once it is done with it; refused with the document and the stored state as they were.
pub fn land(
    desired: &mut Desired,
    running: &Arc<Config>,
    edit: Edit<'_>,
    apply: impl FnOnce(&mut Desired, &Undo, Config) -> Result<(), ChangeError>,
) -> Result<Undo, ChangeError> {
    let undo = caught(|| desired.make(running, edit))?;
    let config = match caught(|| desired.check(running, &undo).map_err(ChangeError::Invalid)) {
        Ok(config) => config,
        Err(e) => {
            desired.revert(undo);
            return Err(e);
        }
    };
    match caught(|| apply(desired, &undo, config)) {
        Ok(()) => {
            desired.landed();
            Ok(undo)
        }
        Err(e) => {
            desired.revert(undo);
            desired.restore();
            if let ChangeError::Panicked(m) = &e {
                tracing::error!("a change panicked ({m}); taken back");
            }
            Err(e)
        }
    }
}

/// `f`'s answer, a panic in it as `ChangeError::Panicked`.
fn caught<T>(f: impl FnOnce() -> Result<T, ChangeError>) -> Result<T, ChangeError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Err(ChangeError::Panicked(message))
    })
}

/// A model-based property test of every change path's machinery: random sequences of changes,
/// valid and invalid, ports included, against a model of what the document must be. The
/// node's `apply` is replaced by one that lands, refuses or panics at random, before or after
/// storing, as the real node may: the real node needs root, namespaces and a data plane, and
/// could not refuse or panic at the moments chosen here (the system test `test_atomic.py`
/// drives the real one). After each step the document (`GET /v1/config`), the stored state
/// read back as a restart reads it, and the configuration a restart would run must all be the
/// model's.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use pearl_control::config_from_document;
    use proptest::prelude::*;
    use serde_json::{json, Value};
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    const PORTS: usize = 4;
    const NAMES: usize = 6;
    /// Panics of the model's making start with this, and are not printed.
    const MARK: &str = "model panic";

    #[derive(Debug, Clone)]
    enum Op {
        Add(usize, usize),
        Remove(usize),
        Move(usize, usize),
        /// A handler refusing its request (an unsettable key).
        Refuse(usize),
        /// A handler panicking halfway through its edit of one VR's entry.
        PanicEdit(usize),
        /// `PUT /v1/config`: these ports (a bit each) and VRs (name → port).
        Whole(u8, Vec<(usize, usize)>),
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Node {
        Lands,
        RefusesBeforeStoring,
        RefusesAfterStoring,
        PanicsBeforeStoring,
        PanicsAfterStoring,
    }

    #[derive(Debug, PartialEq)]
    enum Outcome {
        Landed,
        BadRequest,
        Invalid,
        NotFound,
        Conflict,
        Panicked,
    }

    #[derive(Clone, Default)]
    struct Model {
        ports: BTreeSet<usize>,
        /// (name, port), in the document's order.
        vrs: Vec<(usize, usize)>,
    }

    impl Model {
        fn doc(&self) -> Value {
            json!({"ports": self.ports.iter().map(|&p| port(p)).collect::<Vec<_>>(), "vrs": self.vrs.iter().map(|&(n, p)| vr(n, p)).collect::<Vec<_>>()})
        }

        fn has(&self, name: usize) -> bool {
            self.vrs.iter().any(|&(n, _)| n == name)
        }

        /// What `op` makes of the model if it is valid, else how it is refused.
        fn after(&self, op: &Op) -> Result<Model, Outcome> {
            let mut next = self.clone();
            let valid_port = |p: usize| if self.ports.contains(&p) { Ok(()) } else { Err(Outcome::Invalid) };
            match *op {
                Op::Add(n, _) if self.has(n) => return Err(Outcome::BadRequest),
                Op::Add(n, p) => valid_port(p).map(|()| next.vrs.push((n, p)))?,
                Op::Remove(n) | Op::Move(n, _) | Op::Refuse(n) | Op::PanicEdit(n) if !self.has(n) => return Err(Outcome::NotFound),
                Op::Remove(n) => next.vrs.retain(|&(m, _)| m != n),
                Op::Move(n, p) => {
                    valid_port(p)?;
                    next.vrs.iter_mut().filter(|(m, _)| *m == n).for_each(|v| v.1 = p);
                }
                Op::Refuse(_) => return Err(Outcome::BadRequest),
                Op::PanicEdit(_) => return Err(Outcome::Panicked),
                Op::Whole(ports, ref vrs) => {
                    next.ports = (0..PORTS).filter(|p| ports & (1 << p) != 0).collect();
                    next.vrs = vrs.clone();
                    if vrs.iter().any(|(_, p)| !next.ports.contains(p)) {
                        return Err(Outcome::Invalid);
                    }
                }
            }
            Ok(next)
        }
    }

    fn port(p: usize) -> Value {
        json!({"name": format!("p{p}"), "interface": format!("v{p}"), "driver": "memory"})
    }

    fn vr(name: usize, p: usize) -> Value {
        json!({"name": format!("vr{name}"), "id": name, "interfaces": [{"name": "eth0", "port": format!("p{p}"), "mac": format!("02:00:00:00:00:{:02x}", name + 1)}]})
    }

    fn op() -> impl Strategy<Value = Op> {
        let (n, p) = (0..NAMES, 0..PORTS);
        prop_oneof![
            3 => (n.clone(), p.clone()).prop_map(|(n, p)| Op::Add(n, p)),
            2 => n.clone().prop_map(Op::Remove),
            2 => (n.clone(), p.clone()).prop_map(|(n, p)| Op::Move(n, p)),
            1 => n.clone().prop_map(Op::Refuse),
            1 => n.clone().prop_map(Op::PanicEdit),
            2 => (0u8..16, proptest::collection::btree_map(n, p, 0..4)).prop_map(|(ports, vrs)| Op::Whole(ports, vrs.into_iter().collect())),
        ]
    }

    fn node() -> impl Strategy<Value = Node> {
        prop_oneof![
            6 => Just(Node::Lands),
            1 => Just(Node::RefusesBeforeStoring),
            1 => Just(Node::RefusesAfterStoring),
            1 => Just(Node::PanicsBeforeStoring),
            1 => Just(Node::PanicsAfterStoring),
        ]
    }

    fn quiet_model_panics() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let default = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                let payload = info.payload();
                let message = payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str));
                let ours = message.is_some_and(|m| m.starts_with(MARK));
                if !ours {
                    default(info);
                }
            }));
        });
    }

    /// A directory of its own, on tmpfs where there is one: ten thousand changes stored
    /// durably would otherwise wait for the disk most of the test's time.
    struct Dir(PathBuf);

    impl Dir {
        fn new(case: u64) -> Dir {
            let base = Path::new("/dev/shm");
            let base = if base.is_dir() { base.to_path_buf() } else { std::env::temp_dir() };
            let dir = base.join(format!("pearl-landing-{}-{case}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("c.yaml"), "vrs: []").unwrap();
            Dir(dir)
        }

        /// The store, and the document it holds (restored as a start on the unchanged file would).
        fn open(&self) -> (Store, Option<Value>) {
            let (store, stored) = Store::open(&self.0, &self.0.join("c.yaml"), "vrs: []", &json!({"vrs": []})).unwrap();
            (store, stored.map(|s| s.doc))
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn run(steps: &[(Op, Node)], case: u64) -> Result<(), TestCaseError> {
        quiet_model_panics();
        let dir = Dir::new(case);
        let mut model = Model { ports: [0, 1].into(), vrs: vec![(0, 0)] };
        let (mut store, _) = dir.open();
        store.save(&model.doc()).unwrap();
        let mut running = Arc::new(config_from_document(&model.doc(), &dir.0).unwrap());
        let mut desired = Desired::new(model.doc(), dir.0.clone(), store);
        for (step, (op, behaviour)) in steps.iter().enumerate() {
            let expected = model.after(op);
            let names: Vec<String> = (0..NAMES).map(|n| format!("vr{n}")).collect();
            let edit = match op {
                Op::Add(n, p) => Edit::AddVr(vr(*n, *p)),
                Op::Remove(n) => Edit::RemoveVr(&names[*n]),
                Op::Move(n, p) => {
                    let p = *p;
                    Edit::Vr(
                        &names[*n],
                        Box::new(move |v: &mut Value| {
                            v["interfaces"][0]["port"] = format!("p{p}").into();
                            Ok(())
                        }),
                    )
                }
                Op::Refuse(n) => Edit::Vr(
                    &names[*n],
                    Box::new(|v: &mut Value| {
                        v["kind"] = "kernel".into();
                        Err(ChangeError::BadRequest { field: "interfaces".into(), message: "cannot be set on a running VR".into() })
                    }),
                ),
                Op::PanicEdit(n) => Edit::Vr(
                    &names[*n],
                    Box::new(|v: &mut Value| {
                        v["interfaces"] = json!([]);
                        panic!("{}", MARK)
                    }),
                ),
                Op::Whole(ports, vrs) => {
                    let doc = Model { ports: (0..PORTS).filter(|p| ports & (1 << p) != 0).collect(), vrs: vrs.clone() }.doc();
                    Edit::Whole(Box::new(move |d: &mut Value| {
                        *d = doc;
                        Ok(())
                    }))
                }
            };
            let mut applied = None;
            let answer = land(&mut desired, &running, edit, |desired, undo, config| {
                match behaviour {
                    Node::RefusesBeforeStoring => return Err(ChangeError::Conflict("refused".into())),
                    Node::PanicsBeforeStoring => panic!("{}", MARK),
                    _ => {}
                }
                desired.store(undo).map_err(|e| ChangeError::Storage(e.to_string()))?;
                match behaviour {
                    Node::RefusesAfterStoring => Err(ChangeError::Conflict("refused".into())),
                    Node::PanicsAfterStoring => panic!("{}", MARK),
                    _ => {
                        applied = Some(Arc::new(config));
                        Ok(())
                    }
                }
            });
            let outcome = match &answer {
                Ok(_) => Outcome::Landed,
                Err(ChangeError::BadRequest { .. }) => Outcome::BadRequest,
                Err(ChangeError::Invalid(_)) => Outcome::Invalid,
                Err(ChangeError::NotFound(_)) => Outcome::NotFound,
                Err(ChangeError::Conflict(_)) => Outcome::Conflict,
                Err(ChangeError::Panicked(_)) => Outcome::Panicked,
                Err(e) => panic!("step {step}: {e}"),
            };
            let wanted = match (&expected, behaviour) {
                (Err(_), _) => None,
                (Ok(_), Node::Lands) => Some(Outcome::Landed),
                (Ok(_), Node::RefusesBeforeStoring | Node::RefusesAfterStoring) => Some(Outcome::Conflict),
                (Ok(_), Node::PanicsBeforeStoring | Node::PanicsAfterStoring) => Some(Outcome::Panicked),
            };
            let wanted = wanted.unwrap_or_else(|| {
                expected.as_ref().err().map_or(Outcome::Landed, |e| match e {
                    Outcome::BadRequest => Outcome::BadRequest,
                    Outcome::Invalid => Outcome::Invalid,
                    Outcome::NotFound => Outcome::NotFound,
                    _ => Outcome::Panicked,
                })
            });
            prop_assert_eq!(
                &outcome,
                &wanted,
                "step {}: {:?} with the node {:?}: {:?}",
                step,
                op,
                behaviour,
                answer.as_ref().err().map(|e| e.to_string())
            );
            if let (Ok(undo), Some(after)) = (answer, applied) {
                desired.advance(&running, &after, &undo);
                running = after;
                model = expected.expect("landed");
            }
            prop_assert_eq!(&*desired.doc, &model.doc(), "step {}: GET /v1/config after {:?}", step, op);
            let (_, stored) = dir.open();
            let stored = stored.expect("the stored state is of this file");
            prop_assert_eq!(&stored, &model.doc(), "step {}: the stored state after {:?}", step, op);
            let restarted = config_from_document(&stored, &dir.0).expect("a restart takes the stored state");
            prop_assert_eq!(&restarted, &*running, "step {}: a restart runs another node than this one", step);
        }
        Ok(())
    }

    /// 40 sequences of 250 changes: 10,000 steps in `cargo test`; `PROPTEST_CASES` runs more.
    #[test]
    fn every_change_lands_whole_or_changes_nothing_in_memory_on_disk_and_after_a_restart() {
        let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(40);
        let case = std::sync::atomic::AtomicU64::new(0);
        proptest!(ProptestConfig::with_cases(cases), |(steps in proptest::collection::vec((op(), node()), 250))| {
            run(&steps, case.fetch_add(1, std::sync::atomic::Ordering::Relaxed))?;
        });
    }
}

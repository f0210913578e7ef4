//! A plan made from the last one (only what the changed VRs own made again) against one made
//! from nothing, over random sequences of configurations of a few VRs: VRs come and go, are
//! renamed, move port, change MAC, MTU, queues, limits, `match:` rules and what they import
//! from each other (`leak:`), their impaired links and NAT reservations. The views, the classifier
//! (both the copy of the last plan's and the spare two plans old changed in place) and what the
//! workers know of each VR (`VrRoster`) and their schedulers' configuration (`SchedulerPlan`) must
//! answer as a fresh build does.

use pearl_classifier::Classifier;
use pearl_control::{parse_config, Config, ConfigDiff};
use pearl_dataplane::leak::LeakTable;
use pearl_dataplane::plan::schedulers::SchedulerPlan;
use pearl_dataplane::plan::vid_rules::{build_classifier, rules_changed, update_classifier};
use pearl_dataplane::plan::views::{next_views, remade, ViewSources};
use pearl_dataplane::plan::vr_changes::VrChanges;
use pearl_dataplane::plan::vr_roster::VrRoster;
use pearl_dataplane::plan::MAX_VRS;
use pearl_dataplane::vr::VrView;
use pearl_lookup::rcu::RcuDomain;
use pearl_tables::VrTables;
use pearl_wire::flow_key::mac_to_u128;
use pearl_wire::{Field, FlowKey};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

const SLOTS: usize = 4;
const PORT_MTUS: [u32; 2] = [1500, 9000];

/// One VR slot: present, renamed, kernel, port of its first interface, MAC variant, MTU
/// given, two queues, punt rate variant (the last with a rate cap), share, match rule (UDP port, priority), imports
/// from slot, extras (impairment variant: `% 3`, NAT variant: `/ 3`).
type VrSpec = (bool, bool, bool, u8, u8, bool, bool, u8, Option<u8>, Option<(u8, u8)>, Option<u8>, u8);

fn name(i: usize, renamed: bool) -> String {
    format!("{}{i}", if renamed { "w" } else { "v" })
}

fn config(vrs: &[VrSpec]) -> Option<Config> {
    let mut text =
        String::from("workers: 1\nports: [{name: m0, interface: m0, driver: memory}, {name: m1, interface: m1, driver: memory}]\nvrs:\n");
    for (i, &(present, renamed, kernel, port, mac, mtu, two_queues, punt, share, rule, leak, extras)) in vrs.iter().enumerate() {
        if !present {
            continue;
        }
        let kind = if kernel { "kernel" } else { "fast" };
        let mtu = if mtu { ", mtu: 1400" } else { "" };
        let impair = ["", ", impair: {delay_ms: 1}", ", impair: {loss_percent: 5}"][usize::from(extras % 3)];
        text += &format!(
            "  - {{name: {}, id: {}, kind: {kind}, interfaces: [{{name: eth0, port: m{}, mac: '02:00:00:00:0{}:0{}'{mtu}{impair}, addresses: [10.{i}.0.1/24]}}, {{name: eth1, port: m{}, mac: '02:00:00:00:1{i}:00'}}]",
            name(i, renamed),
            i + 1,
            port % 2,
            i + 1,
            mac % 2,
            (port + 1) % 2,
        );
        text += if two_queues { ", queues: [{weight: 1}, {weight: 3}]" } else { ", queues: [{weight: 2}]" };
        if extras / 3 > 0 {
            text += &format!(
                ", nat: {{address: 10.{i}.0.1, ports: {}-{}}}",
                20000 + u32::from(extras / 3) * 1000,
                20099 + u32::from(extras / 3) * 1000
            );
        }
        text += &format!(", limits: {{punt_pps: {}", 100 + u32::from(punt % 3));
        if punt % 3 == 2 {
            text += ", rate_mbps: 100";
        }
        if let Some(s) = share {
            text += &format!(", share: {}", 1 + u32::from(s % 4));
        }
        text += "}";
        if let Some((udp, priority)) = rule {
            text += &format!(", match: [{{udp_dst: {}, priority: {}}}]", 4000 + u16::from(udp % 3), 100 + u32::from(priority % 2) * 100);
        }
        if let Some(from) = leak {
            // Whichever VR carries that name now, if any.
            let from = usize::from(from) % SLOTS;
            let target = vrs[from];
            if from != i && target.0 && !target.2 {
                text += &format!(", leak: [{{from: {}, prefixes: [10.{from}.0.0/16]}}]", name(from, target.1));
            }
        }
        text += "}\n";
    }
    // Rules of two VRs that tie are refused here already.
    parse_config(&text).ok()
}

fn vr_spec() -> impl Strategy<Value = VrSpec> {
    (
        (any::<bool>(), prop::bool::weighted(0.2), prop::bool::weighted(0.2), 0u8..2, 0u8..2, any::<bool>()),
        (any::<bool>(), 0u8..3, prop::option::of(0u8..4), prop::option::of((0u8..3, 0u8..2)), prop::option::of(0u8..4), 0u8..9),
    )
        .prop_map(|((a, b, c, d, e, f), (g, h, i, j, k, l))| (a, b, c, d, e, f, g, h, i, j, k, l))
}

/// The running plan's pieces, kept as the data plane keeps them.
struct Running {
    config: Arc<Config>,
    tables: BTreeMap<u16, Arc<Mutex<VrTables>>>,
    views: Arc<[Option<VrView>]>,
    classifier: Classifier,
    /// The classifier of the plan before, its configuration, and the VRs whose rules changed since.
    spare: Option<(Classifier, Arc<Config>, Vec<u16>)>,
    roster: VrRoster,
    sched: SchedulerPlan,
}

/// What a view says, as far as it can be compared.
fn describe(v: &VrView) -> String {
    let links: Vec<_> = (0..2).map(|p| (v.mtu(p), v.urpf(p))).collect();
    format!(
        "{links:?} {:?} punt {} share {} offload {} kernel {} fib {:x}/{:x}",
        v.facts.interface_ports,
        v.facts.punt_pps,
        v.facts.share,
        v.offload,
        v.program.is_kernel_path(),
        v.fib4.cell_address(),
        v.fib6.cell_address()
    )
}

fn answers(c: &Classifier) -> Vec<Option<(u16, u32)>> {
    let mut out = Vec::new();
    for port in 0..2u128 {
        for (vr, variant) in (1..=SLOTS as u8).flat_map(|v| [(v, 0u8), (v, 1), (v + 0x10, 0)]) {
            for udp in 3999..4003u128 {
                let key = FlowKey::default()
                    .with(Field::InPort, port)
                    .with(Field::EthDst, mac_to_u128([2, 0, 0, 0, vr, variant]))
                    .with(Field::EtherType, 0x0800)
                    .with(Field::IpProto, 17)
                    .with(Field::L4Dst, udp);
                out.push(c.lookup(&key).map(|(_, v)| (v.vr.0, v.action)));
            }
        }
    }
    out
}

fn views_of(
    last: &[Option<VrView>],
    config: &Config,
    changes: &VrChanges<'_>,
    tables: &BTreeMap<u16, Arc<Mutex<VrTables>>>,
) -> Arc<[Option<VrView>]> {
    let programs = HashMap::new();
    let sources = ViewSources { tables, port_mtus: &PORT_MTUS, programs: &programs, offload: false };
    next_views(last, config, changes, &[], &sources).expect("MTUs within the ports'")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]
    #[test]
    fn a_plan_made_from_the_last_one_is_the_plan_made_from_nothing(
        steps in prop::collection::vec(prop::collection::vec(vr_spec(), SLOTS), 2..7),
    ) {
        let domain = RcuDomain::new();
        let mut running: Option<Running> = None;
        for spec in &steps {
            let Some(next) = config(spec).map(Arc::new) else { continue };
            let Ok(fresh_classifier) = build_classifier(&next) else { continue };
            // As the data plane starts: from no VRs.
            let from_none = ConfigDiff::between(&Arc::new(next.without_vrs()), &next);
            let Some(r) = running.as_mut() else {
                let tables: BTreeMap<_, _> = next.vrs.iter()
                    .map(|vr| (vr.id, Arc::new(Mutex::new(VrTables::build(vr, &domain).expect("tables")))))
                    .collect();
                let views = views_of(&vec![None; MAX_VRS], &next, &VrChanges::of(&from_none), &tables);
                let roster = VrRoster::of(&from_none.old).next(&VrChanges::of(&from_none));
                prop_assert_eq!(&roster, &VrRoster::of(&next));
                let sched = SchedulerPlan::new(&from_none.old).next(&next, &VrChanges::of(&from_none));
                prop_assert_eq!(&sched, &SchedulerPlan::new(&next));
                running = Some(Running { config: next, tables, views, classifier: fresh_classifier, spare: None, roster, sched });
                continue;
            };
            let diff = ConfigDiff::between(&r.config, &next);
            let changes = VrChanges::of(&diff);
            // Tables as the data plane keeps them: a VR that stays the same VR keeps its own.
            let mut tables = r.tables.clone();
            for id in changes.gone() {
                tables.remove(&id);
            }
            for (change, vr) in changes.changed() {
                if !change.is_in_place() {
                    tables.insert(vr.id, Arc::new(Mutex::new(VrTables::build(vr, &domain).expect("tables"))));
                }
            }

            let views = views_of(&r.views, &next, &changes, &tables);
            let fresh = views_of(&vec![None; MAX_VRS], &next, &VrChanges::of(&from_none), &tables);
            for id in 0..MAX_VRS {
                prop_assert_eq!(views[id].as_ref().map(describe), fresh[id].as_ref().map(describe), "VR {}", id);
            }
            // A view kept is one whose every input is as it was: the program behind it (an IP
            // router's imports) is not visible from outside.
            let remade: Vec<usize> = remade(&next, &changes, &[]).collect();
            for (v, vr) in next.vrs.iter().enumerate().filter(|(v, _)| !remade.contains(v)) {
                let o = r.config.vrs.iter().position(|o| o.id == vr.id).expect("a kept VR was there before");
                prop_assert_eq!(&r.config.vrs[o], vr);
                prop_assert_eq!(LeakTable::of(&r.config, o), LeakTable::of(&next, v), "VR {}'s imports", vr.id);
            }

            let roster = r.roster.next(&changes);
            prop_assert_eq!(&roster, &VrRoster::of(&next));
            let sched = r.sched.clone().next(&next, &changes);
            prop_assert_eq!(&sched, &SchedulerPlan::new(&next));

            let redo = rules_changed(&diff);
            let copied = update_classifier(r.classifier.clone(), &r.config, &next, &redo).expect("a fresh build took it");
            prop_assert_eq!(answers(&copied), answers(&fresh_classifier));
            if let Some((spare, made_for, mut since)) = r.spare.take() {
                since.extend(&redo);
                since.sort_unstable();
                since.dedup();
                let reused = update_classifier(spare, &made_for, &next, &since).expect("a fresh build took it");
                prop_assert_eq!(answers(&reused), answers(&fresh_classifier));
            }
            let last = std::mem::replace(&mut r.classifier, copied);
            r.spare = Some((last, std::mem::replace(&mut r.config, next), redo));
            r.tables = tables;
            r.views = views;
            r.roster = roster;
            r.sched = sched;
        }
    }
}

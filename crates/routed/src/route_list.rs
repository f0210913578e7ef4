//! The kernel routes to one prefix and how notifications change them. IPv4 and IPv6 differ:
//!
//! - IPv4 keeps an ordered list of aliases per (table, TOS, metric); `ip route append` adds an
//!   alternative the kernel does not use while the first exists, a delete removes the alias it
//!   names, and notifications flag replace and append.
//! - IPv6 keeps one route per (table, metric) whose next hops grow with `append`; a notification
//!   names the whole set after an add, but only the removed next hop after a partial delete.
//!
//! Replaying a notification the state already reflects changes nothing, so events that raced
//! a dump can be applied after it.

use crate::kernel_route::{target_of, Hop, KernelRoute, Target};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RouteList {
    #[default]
    Empty,
    /// The common case, kept out of the heap.
    One(KernelRoute),
    Many(Vec<KernelRoute>),
}

/// What a message does to the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// One entry of a dump, in the kernel's order.
    Dump,
    New {
        replace: bool,
        append: bool,
    },
    Del,
}

impl RouteList {
    pub fn is_empty(&self) -> bool {
        matches!(self, RouteList::Empty)
    }

    pub fn len(&self) -> usize {
        match self {
            RouteList::Empty => 0,
            RouteList::One(_) => 1,
            RouteList::Many(v) => v.len(),
        }
    }

    /// The route the kernel uses for this prefix (the first of the best rank).
    pub fn winner(&self) -> Option<&KernelRoute> {
        match self {
            RouteList::Empty => None,
            RouteList::One(r) => Some(r),
            RouteList::Many(v) => v.iter().min_by_key(|r| r.rank()),
        }
    }

    /// Applies `op` with route `r`; returns whether the list changed.
    pub fn apply(&mut self, r: KernelRoute, op: Op, ipv6: bool) -> bool {
        match (&*self, op) {
            (RouteList::Empty, Op::Del) => false,
            (RouteList::Empty, _) => {
                *self = RouteList::One(r);
                true
            }
            (RouteList::One(old), Op::Del) if *old == r => {
                *self = RouteList::Empty;
                true
            }
            (RouteList::One(old), Op::New { .. }) if *old == r => false,
            _ => {
                let mut v = match std::mem::take(self) {
                    RouteList::Empty => Vec::new(),
                    RouteList::One(old) => vec![old],
                    RouteList::Many(v) => v,
                };
                let changed = if ipv6 { apply_v6(&mut v, r, op) } else { apply_v4(&mut v, r, op) };
                *self = match v.len() {
                    0 => RouteList::Empty,
                    1 => RouteList::One(v.pop().expect("one route")),
                    _ => RouteList::Many(v),
                };
                changed
            }
        }
    }
}

fn same_slot(a: &KernelRoute, b: &KernelRoute) -> bool {
    a.table == b.table && a.tos == b.tos && a.metric == b.metric
}

fn apply_v4(v: &mut Vec<KernelRoute>, r: KernelRoute, op: Op) -> bool {
    match op {
        Op::Dump => {
            v.push(r);
            true
        }
        Op::New { replace, append } => {
            if v.contains(&r) {
                return false;
            }
            match v.iter().position(|e| same_slot(e, &r)) {
                Some(i) if replace => v[i] = r,
                // `ip route prepend` (create without exclusive) puts the new alias first.
                Some(i) if !append => v.insert(i, r),
                _ => v.push(r),
            }
            true
        }
        Op::Del => {
            let exact = v.iter().position(|e| *e == r);
            match exact.or_else(|| v.iter().position(|e| same_slot(e, &r))) {
                Some(i) => {
                    v.remove(i);
                    true
                }
                None => false,
            }
        }
    }
}

fn is_unicast(r: &KernelRoute) -> bool {
    matches!(r.target, Target::One(_) | Target::Multi(_))
}

fn apply_v6(v: &mut Vec<KernelRoute>, r: KernelRoute, op: Op) -> bool {
    let Some(i) = v.iter().position(|e| same_slot(e, &r)) else {
        if op == Op::Del {
            return false;
        }
        v.push(r);
        return true;
    };
    let both_unicast = is_unicast(&v[i]) && is_unicast(&r);
    match op {
        Op::Del if both_unicast => {
            let left: Vec<Hop> = v[i].hops().iter().filter(|h| !r.hops().iter().any(|d| d.same_place(h))).copied().collect();
            if left.len() == v[i].hops().len() {
                return false;
            }
            if left.is_empty() {
                v.remove(i);
            } else {
                v[i].target = target_of(left);
            }
            true
        }
        Op::Del => {
            v.remove(i);
            true
        }
        Op::New { replace: false, .. } | Op::Dump if both_unicast => {
            let mut hops = v[i].hops().to_vec();
            for h in r.hops() {
                match hops.iter_mut().find(|x| x.same_place(h)) {
                    Some(x) => x.weight = h.weight,
                    None => hops.push(*h),
                }
            }
            let merged = target_of(hops);
            if merged == v[i].target {
                return false;
            }
            v[i].target = merged;
            true
        }
        _ if v[i] == r => false,
        _ => {
            v[i] = r;
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_route::Table;

    fn via(gw: &str, ifindex: u32) -> Hop {
        Hop { ifindex, gateway: Some(gw.parse().unwrap()), weight: 1 }
    }

    fn route(metric: u32, hops: &[Hop]) -> KernelRoute {
        KernelRoute { table: Table::Main, tos: 0, metric, target: target_of(hops.to_vec()) }
    }

    const NEW: Op = Op::New { replace: false, append: false };
    const APPEND: Op = Op::New { replace: false, append: true };
    const REPLACE: Op = Op::New { replace: true, append: false };

    #[test]
    fn ipv4_aliases_keep_their_order_and_the_first_wins() {
        let (a, b, c) = (route(0, &[via("10.0.0.2", 2)]), route(0, &[via("10.0.0.3", 2)]), route(0, &[via("10.0.0.4", 2)]));
        let mut l = RouteList::default();
        assert!(l.apply(a.clone(), NEW, false));
        assert!(l.apply(b.clone(), APPEND, false));
        assert_eq!(l.winner(), Some(&a));
        assert!(!l.apply(b.clone(), APPEND, false), "a replayed event changes nothing");
        assert!(l.apply(c.clone(), REPLACE, false));
        assert_eq!(l.winner(), Some(&c), "replace swaps the first alias");
        assert!(l.apply(c.clone(), Op::Del, false));
        assert_eq!(l.winner(), Some(&b));
        assert!(l.apply(b, Op::Del, false));
        assert!(l.is_empty());
    }

    #[test]
    fn the_lowest_metric_and_the_local_table_win() {
        let mut l = RouteList::default();
        l.apply(route(100, &[via("10.0.0.2", 2)]), NEW, false);
        l.apply(route(20, &[via("10.0.0.3", 2)]), NEW, false);
        assert_eq!(l.winner().unwrap().metric, 20);
        let local = KernelRoute { table: Table::Local, tos: 0, metric: 500, target: Target::Local };
        l.apply(local.clone(), NEW, false);
        assert_eq!(l.winner(), Some(&local));
    }

    #[test]
    fn ipv6_next_hops_merge_on_append_and_leave_one_by_one() {
        let (a, b) = (via("fe80::1", 2), via("fe80::2", 3));
        let mut l = RouteList::default();
        l.apply(route(1024, &[a]), NEW, true);
        // After `ip -6 route append` the kernel reports the whole set.
        assert!(l.apply(route(1024, &[b, a]), APPEND, true));
        assert_eq!(l.winner().unwrap().hops(), &[a, b]);
        // `ip -6 route del … via fe80::1` reports only the removed next hop.
        assert!(l.apply(route(1024, &[a]), Op::Del, true));
        assert_eq!(l.winner().unwrap().hops(), &[b]);
        assert!(!l.apply(route(1024, &[a]), Op::Del, true), "already gone");
        assert!(l.apply(route(1024, &[via("fe80::9", 2)]), REPLACE, true));
        assert_eq!(l.winner().unwrap().hops(), &[via("fe80::9", 2)]);
        assert!(l.apply(route(1024, &[via("fe80::9", 2)]), Op::Del, true));
        assert!(l.is_empty());
    }
}

//! Worker time as a resource the VRs share (issue 16's noisy neighbour). Each batch's time is
//! charged to the VRs whose packets it carried, and the rest of a round (sending, the slow path)
//! to the round's, by their packets, a refused packet counting a quarter of a taken one: a VR
//! whose packets are expensive (lookups that miss the cache, long output runs) is charged for
//! that, and a flooding VR for refusing its own excess. While the worker keeps up, nothing is
//! refused. Once a window finds it busy nearly all the time, or a receive ring lost frames, each
//! VR gets an allowance of worker time for the next window: its weighted max-min share
//! (`limits.share`, as on the ports) of most of the window, the rest kept as headroom to drain
//! the rings, paced as a token bucket. A VR past its allowance loses its packets right after
//! classification, before lookups, rewrites and queues spend time on them (`worker_share`). A
//! VR alone on the worker is never held back, and when every VR wants more than its share the
//! headroom is handed out too, and only the VRs that stand out above the crowd are held to
//! their allowance (`crowd_level`). Policing ends when the VRs' demands (their packets, taken and
//! refused, at their cost per packet) fit in the window again.

use crate::prefetch::prefetch;

/// How often allowances are worked out.
pub const WINDOW_NS: u64 = 10_000_000;
/// A window at least this busy finds the worker unable to keep up.
const CONTENDED: f64 = 0.9;
/// The part of a window handed out as allowances; the rest receives and refuses the excess.
const ALLOTTED: f64 = 0.85;
/// An allowance's bucket holds a window of it (at least `MIN_DEPTH` packets): room for a
/// neighbour's bursts, while a flooding VR's bucket stays empty. It starts with this fraction of the allowance, a millisecond of
/// work, so that no VR overloads the worker when policing begins (and at least two packets'
/// worth, so that a VR with costly packets is not shut out).
const FIRST_FILL: u64 = 10;
/// What refusing a packet costs next to taking it (receiving, parsing and classifying it,
/// against the whole pipeline and the output): time is split between VRs in these units, so
/// that a flooding VR pays for the refusal of its own excess.
const TAKEN_UNITS: u32 = 4;
const REFUSED_UNITS: u32 = 1;

/// One VR's account on one worker: one line, as a batch spread over thousands of VRs loads one
/// per packet. Counts of a window and costs per packet fit 32 bits (a window is 10 ms).
#[derive(Clone, Copy, Default, Debug)]
#[repr(align(64))]
struct Account {
    /// Units (`TAKEN_UNITS` a packet taken, `REFUSED_UNITS` one refused) of the current batch
    /// and round, not yet charged.
    batch: u32,
    round: u32,
    /// Listed in `window_vrs`.
    in_window: bool,
    /// This window: packets taken and refused, and the worker time charged.
    taken: u32,
    refused: u32,
    charged_ns: u64,
    /// Worker time allowed per window, paced as a token bucket (in ns of worker time) that
    /// fills at that rate from `filled_ns` and holds one window's worth.
    allowance_ns: u64,
    tokens_ns: i64,
    filled_ns: u64,
    /// Worker time per packet taken, as last measured.
    cost_ns: u32,
    /// What the VR wanted in the window just ended: its packets at its cost.
    demand_ns: u64,
    /// Wanting no more than its share, the VR is not held to it for this window: a VR with a
    /// few packets at a time measures a noisy cost (its rounds' fixed costs, the worker losing
    /// its CPU while in its batch), which must not turn into refusals.
    unpoliced: bool,
}

/// See `WorkerShare::crowd_level`.
const STANDS_OUT: u64 = 2;

/// The least a bucket holds, in packets at the VR's cost. With thousands of VRs sharing a worker
/// each allowance is a few packets a window: a bucket of one window would refuse a VR whose
/// packets come at its share but not evenly spaced, and from a source that offers whatever the
/// worker takes (a ring that never runs dry), refusing more makes room to receive, and refuse,
/// more still.
const MIN_DEPTH: u64 = 64;

impl Account {
    fn first_fill(&self) -> i64 {
        (self.allowance_ns / FIRST_FILL).max(2 * u64::from(self.cost_ns)) as i64
    }

    /// What the bucket holds at most: a window of the allowance, or `MIN_DEPTH` packets.
    fn depth(&self) -> i64 {
        self.allowance_ns.max(MIN_DEPTH * u64::from(self.cost_ns)) as i64
    }
}

#[derive(Default)]
pub struct WorkerShare {
    /// `[vr id]`.
    accounts: Vec<Account>,
    /// VRs with packets this batch, this round, this window, and with an allowance: the
    /// accounts a window's end visits, so that idle VRs cost nothing.
    batch_vrs: Vec<u16>,
    round_vrs: Vec<u16>,
    window_vrs: Vec<u16>,
    allowed: Vec<u16>,
    /// Time of this round's batches, charged already.
    round_batches_ns: u64,
    window_start_ns: u64,
    /// The end of the last round: admission's clock.
    now_ns: u64,
    busy_ns: u64,
    /// The worker thread's CPU time when the window started.
    window_cpu_ns: u64,
    engaged: bool,
    overflow_until_ns: u64,
    /// `(vr, demand, weight)` of a window's end, and the VRs' demands per weight, kept so that
    /// no window allocates.
    demands: Vec<(u16, u64, u64)>,
    levels: Vec<u64>,
    /// Allowance per unit of weight for a VR that had no traffic when allowances were made.
    newcomer_ns_per_weight: u64,
}

impl WorkerShare {
    /// Room for VR ids below `vrs`.
    pub fn resize(&mut self, vrs: usize) {
        self.accounts.resize(vrs, Account::default());
        // Each list holds a VR once at most: with room for all, none grows while packets flow.
        for list in [&mut self.batch_vrs, &mut self.round_vrs, &mut self.window_vrs, &mut self.allowed] {
            list.retain(|&v| (v as usize) < vrs);
            list.reserve(vrs.saturating_sub(list.len()));
        }
        self.demands.reserve(vrs);
        self.levels.reserve(vrs);
    }

    /// A receive ring lost frames (counted by its driver now and then): whatever the busy time
    /// says, the worker did not keep up; windows ending before `until_ns` count as contended.
    pub fn rings_overflowed(&mut self, until_ns: u64) {
        self.overflow_until_ns = until_ns;
    }

    /// Whether the worker did not keep up lately: allowances in force, or a ring overflowed.
    pub fn falling_behind(&self) -> bool {
        self.engaged || self.now_ns < self.overflow_until_ns
    }

    /// Whether allowances are in force (a cheaper admission path otherwise).
    #[inline]
    pub fn engaged(&self) -> bool {
        self.engaged
    }

    /// Starts loading `vr`'s account, for a batch spread over many VRs.
    #[inline]
    pub fn prefetch(&self, vr: u16) {
        if let Some(a) = self.accounts.get(vr as usize) {
            prefetch(a);
        }
    }

    /// Whether a packet of `vr` may go on; counts it for charging if so. `weight` is the VR's
    /// share, asked for only if the VR has no allowance yet.
    #[inline]
    pub fn admit(&mut self, vr: u16, weight: impl FnOnce() -> u64) -> bool {
        let a = &mut self.accounts[vr as usize];
        if !a.in_window {
            a.in_window = true;
            self.window_vrs.push(vr);
        }
        if self.engaged && !a.unpoliced {
            if a.allowance_ns == 0 {
                // A VR quiet when allowances were made: its share, its bucket as at the start.
                a.allowance_ns = weight().max(1) * self.newcomer_ns_per_weight;
                a.tokens_ns = a.first_fill();
                a.filled_ns = self.now_ns;
                self.allowed.push(vr);
            }
            if a.filled_ns < self.now_ns {
                a.tokens_ns = (a.tokens_ns + ((self.now_ns - a.filled_ns) * a.allowance_ns / WINDOW_NS) as i64).min(a.depth());
                a.filled_ns = self.now_ns;
            }
            let cost = a.cost_ns.max(1) as i64;
            // Refusing takes no tokens: a VR offered without end (a memory port, a NIC at line
            // rate) would otherwise owe its whole allowance to refusals and never be served.
            // What refusing costs shows in its cost per packet taken instead.
            if a.tokens_ns < cost {
                a.refused += 1;
                self.count(vr, REFUSED_UNITS);
                return false;
            }
            a.tokens_ns -= cost;
        }
        self.accounts[vr as usize].taken += 1;
        self.count(vr, TAKEN_UNITS);
        true
    }

    #[inline]
    fn count(&mut self, vr: u16, units: u32) {
        let a = &mut self.accounts[vr as usize];
        if a.batch == 0 {
            self.batch_vrs.push(vr);
        }
        a.batch += units;
    }

    /// Charges a batch that took `ns` to the VRs whose packets it took, by their packets: VRs
    /// received on different ports are charged apart.
    pub fn end_batch(&mut self, ns: u64) {
        let took: u64 = self.batch_vrs.iter().map(|&v| u64::from(self.accounts[v as usize].batch)).sum();
        for &v in &self.batch_vrs {
            let a = &mut self.accounts[v as usize];
            a.charged_ns += ns * u64::from(a.batch) / took;
            if a.round == 0 {
                self.round_vrs.push(v);
            }
            a.round += a.batch;
            a.batch = 0;
        }
        self.batch_vrs.clear();
        self.round_batches_ns += ns;
    }

    /// Charges the rest of a round that worked from `start_ns` to `end_ns` (sending, the slow
    /// path) to the VRs whose packets it took; at a window's end, works out the next window's
    /// allowances (`weight(vr)`: the VR's share; `cpu_ns()`: the worker thread's CPU time, read
    /// once a window).
    pub fn end_round(&mut self, start_ns: u64, end_ns: u64, weight: impl Fn(u16) -> u64, cpu_ns: impl FnOnce() -> u64) {
        let took: u64 = self.round_vrs.iter().map(|&v| u64::from(self.accounts[v as usize].round)).sum();
        if took > 0 {
            let ns = end_ns.saturating_sub(start_ns);
            let rest = ns.saturating_sub(self.round_batches_ns);
            self.busy_ns += ns;
            for &v in &self.round_vrs {
                let a = &mut self.accounts[v as usize];
                a.charged_ns += (rest * u64::from(a.round)).checked_div(took).unwrap_or(0);
                a.round = 0;
            }
        }
        self.round_vrs.clear();
        self.round_batches_ns = 0;
        self.now_ns = end_ns;
        let elapsed = end_ns.saturating_sub(self.window_start_ns);
        if elapsed >= WINDOW_NS {
            let cpu = cpu_ns();
            let ran = cpu.saturating_sub(self.window_cpu_ns);
            self.window_cpu_ns = cpu;
            self.end_window(elapsed, ran, weight);
            self.window_start_ns = end_ns;
        }
    }

    /// `ran`: the CPU time the worker had in the window.
    fn end_window(&mut self, elapsed: u64, ran: u64, weight: impl Fn(u16) -> u64) {
        let capacity = (elapsed as f64 * ALLOTTED) as u64;
        // Busy rounds the worker spent off its CPU (another thread took it) are not packets'
        // work: their length says nothing of what the VRs cost (a VR whose batch the worker was
        // preempted in would be charged the other thread's time slice), and policing would only
        // drop frames the worker would have caught up with.
        let on_cpu = ran as f64 >= CONTENDED * self.busy_ns as f64;
        let mut demands = std::mem::take(&mut self.demands);
        demands.clear();
        for &v in &self.window_vrs {
            let a = &mut self.accounts[v as usize];
            if a.taken > 0 && (on_cpu || a.cost_ns == 0) {
                let units = u64::from(a.taken) * u64::from(TAKEN_UNITS) + u64::from(a.refused) * u64::from(REFUSED_UNITS);
                a.cost_ns = u32::try_from(a.charged_ns * u64::from(TAKEN_UNITS) / units).unwrap_or(u32::MAX).max(1);
            }
            a.demand_ns = (u64::from(a.taken) + u64::from(a.refused)) * u64::from(a.cost_ns);
            demands.push((v, a.demand_ns, weight(v).max(1)));
        }
        let demanded: u64 = demands.iter().map(|d| d.1).sum();
        let overflowed = self.now_ns < self.overflow_until_ns;
        let contended = (self.busy_ns as f64 >= CONTENDED * elapsed as f64 && on_cpu) || overflowed;
        let was_engaged = self.engaged;
        // A lone VR keeps the whole worker: there is no one to share it with.
        let sharing = demands.len() >= 2;
        self.engaged = sharing && if was_engaged { demanded > capacity && (on_cpu || overflowed) } else { contended };
        for &v in self.window_vrs.iter().chain(&self.allowed) {
            let a = &mut self.accounts[v as usize];
            *a = Account { cost_ns: a.cost_ns, tokens_ns: a.tokens_ns, demand_ns: a.demand_ns, ..Account::default() };
        }
        self.allowed.clear();
        if self.engaged {
            let total_weight: u64 = demands.iter().map(|d| d.2).sum();
            self.newcomer_ns_per_weight = capacity / (total_weight + 1);
            max_min(capacity, &mut demands);
            // The headroom serves a VR within its share, whose frames share receive rings with
            // the others' excess; when every VR wants more than its share, all of the window is
            // handed out (an unsatisfied VR's allowance is its weight's part of the capacity).
            if demands.iter().all(|&(v, allowance, _)| self.accounts[v as usize].demand_ns > allowance) {
                for d in demands.iter_mut() {
                    d.1 = (d.1 as u128 * elapsed as u128 / capacity.max(1) as u128) as u64;
                }
            }
            let crowd = self.crowd_level(&demands);
            for &(v, allowance, weight) in &demands {
                let a = &mut self.accounts[v as usize];
                a.allowance_ns = allowance.max(1);
                a.unpoliced = a.demand_ns <= allowance || a.demand_ns / weight <= crowd;
                // A bucket starts at its first fill when policing starts, and stays there while
                // its VR is not policed; later windows carry what is left (a flooding VR's stays
                // empty).
                a.tokens_ns = if was_engaged && !a.unpoliced { a.tokens_ns.min(a.depth()) } else { a.first_fill() };
                a.filled_ns = self.now_ns;
                self.allowed.push(v);
            }
        }
        self.window_vrs.clear();
        self.busy_ns = 0;
        self.demands = demands;
    }

    /// When every VR wants more than its share, the demand per weight up to which a VR is one
    /// of the crowd and not held to its allowance: refusing such a VR moves no time to the
    /// others (the rings, or a source that never runs dry, serve them alike already) and only
    /// costs the worker the refusals. With thousands of VRs wanting the same, each allowance is
    /// a few packets a window and the noise in measuring their cost had the worker refuse a
    /// sixth of all frames. A VR wanting more than `STANDS_OUT` times what the lowest quarter of
    /// the VRs want is held to its allowance, so a flood by up to three VRs in four still meets
    /// its share.
    fn crowd_level(&mut self, demands: &[(u16, u64, u64)]) -> u64 {
        self.levels.clear();
        self.levels.extend(demands.iter().map(|&(v, _, weight)| self.accounts[v as usize].demand_ns / weight));
        let quarter = (self.levels.len() - 1) / 4;
        let (_, low, _) = self.levels.select_nth_unstable(quarter);
        *low * STANDS_OUT
    }
}

/// Weighted max-min shares of `capacity` for `(vr, demand, weight)`, each written over its
/// demand: a VR that wants less than its weighted share of what is left is allowed that share
/// (more than its demand, so that a VR growing into its share is not held to last window's
/// demand); the others split the rest by weight.
fn max_min(capacity: u64, demands: &mut [(u16, u64, u64)]) {
    demands.sort_unstable_by(|a, b| (a.1 as u128 * b.2 as u128).cmp(&(b.1 as u128 * a.2 as u128)));
    let mut left = capacity;
    let mut weight_left: u64 = demands.iter().map(|d| d.2).sum();
    for (_, demand, w) in demands.iter_mut() {
        let fair = (left as u128 * *w as u128 / weight_left.max(1) as u128) as u64;
        left -= (*demand).min(fair);
        weight_left -= *w;
        *demand = fair;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_account_is_one_line() {
        assert_eq!((std::mem::size_of::<Account>(), std::mem::align_of::<Account>()), (64, 64));
    }

    /// What refusing a packet costs the worker in `simulate`.
    const REFUSE_NS: u64 = 10;

    /// Runs `windows` windows of 100 rounds of 100 µs. Each round `offered[vr]` packets of each
    /// VR arrive, each VR's on a port of its own, costing `cost_ns[vr]` each once admitted and
    /// `REFUSE_NS` if refused. A worker that needed more than a round for the last round's
    /// packets falls behind, and its ring loses that share of everyone's packets. Returns each
    /// VR's packets worked through in the last window, and the worker time they and the
    /// refusal of the VR's others took.
    fn simulate(offered: &[u64], cost_ns: &[u64], weights: &[u64], windows: u64) -> (Vec<u64>, Vec<u64>) {
        let mut s = WorkerShare::default();
        s.resize(offered.len());
        let round_ns = WINDOW_NS / 100;
        let mut taken = vec![0; offered.len()];
        let mut time = vec![0; offered.len()];
        let mut kept = 1.0;
        for w in 0..windows {
            taken.iter_mut().for_each(|t| *t = 0);
            time.iter_mut().for_each(|t| *t = 0);
            for r in 0..100 {
                let mut work = 0;
                for (vr, &n) in offered.iter().enumerate() {
                    let arrived = (n as f64 * kept) as u64;
                    let admitted = (0..arrived).filter(|_| s.admit(vr as u16, || weights[vr])).count() as u64;
                    let ns = admitted * cost_ns[vr] + (arrived - admitted) * REFUSE_NS;
                    if arrived > 0 {
                        s.end_batch(ns);
                    }
                    work += ns;
                    taken[vr] += admitted;
                    time[vr] += ns;
                }
                kept = (round_ns as f64 / work as f64).min(1.0);
                let start = (w * 100 + r) * round_ns;
                let end = start + work.min(round_ns);
                s.end_round(start, end, |v| weights[v as usize], || end);
            }
        }
        (taken, time)
    }

    /// Rounds of two VRs' few packets, each round as long as a whole window of wall time;
    /// `cpu_per_window`: the CPU time the worker had in each. Whether policing began.
    fn stretched_rounds(cpu_per_window: u64) -> bool {
        let mut s = WorkerShare::default();
        s.resize(2);
        for w in 1..=5u64 {
            for vr in 0..2u16 {
                for _ in 0..3 {
                    s.admit(vr, || 1);
                }
                s.end_batch(2_000);
            }
            s.end_round((w - 1) * WINDOW_NS, w * WINDOW_NS, |_| 1, || w * cpu_per_window);
        }
        s.engaged()
    }

    #[test]
    fn a_worker_kept_off_its_cpu_is_not_taken_for_one_that_cannot_keep_up() {
        // Another thread held the CPU: 0.1 ms of a 10 ms window. Nothing to police.
        assert!(!stretched_rounds(100_000));
        // The same rounds on the CPU all along: the worker is busy, and the VRs share it.
        assert!(stretched_rounds(WINDOW_NS));
    }

    #[test]
    fn a_neighbour_whose_batch_the_worker_was_preempted_in_is_not_charged_the_time_slice() {
        // A floods, B sends 5 packets a round; both cost 1 µs a packet. In one round the worker
        // loses its CPU for 8 ms inside B's batch: on the wall clock B's packets cost ~80 µs each
        // that window, as if B wanted more than its half of the worker.
        let mut s = WorkerShare::default();
        s.resize(2);
        let (mut now, mut cpu) = (0u64, 0u64);
        let mut refused_b = 0;
        for round in 0..2_000u64 {
            let start = now;
            // The flood overflows the receive rings all along.
            s.rings_overflowed(now + WINDOW_NS);
            let taken_a = (0..100).filter(|_| s.admit(0, || 1)).count() as u64;
            s.end_batch(taken_a * 1_000 + (100 - taken_a) * 250);
            refused_b += (0..5).filter(|_| !s.admit(1, || 1)).count();
            let preempted = if round == 500 { 8_000_000 } else { 0 };
            s.end_batch(5_000 + preempted);
            let work = taken_a * 1_000 + (100 - taken_a) * 250 + 5_000;
            now += work + preempted;
            cpu += work;
            s.end_round(start, now, |_| 1, || cpu);
        }
        assert!(s.engaged(), "A's flood engages policing");
        assert_eq!(refused_b, 0);
    }

    #[test]
    fn a_worker_that_keeps_up_refuses_nothing() {
        // Each round: 40 packets of A at 100 ns and 10 of B at 100 ns, 5 µs of 100 µs.
        let (taken, _) = simulate(&[40, 10], &[100, 100], &[1, 1], 5);
        assert_eq!(taken, vec![4000, 1000]);
    }

    #[test]
    fn a_flooding_vr_is_cut_to_what_its_neighbour_leaves_and_the_neighbour_keeps_everything() {
        // A offers 1,500 packets per 100 µs round at 100 ns: 1.5 workers. B offers 50.
        let (taken, _) = simulate(&[1500, 50], &[100, 100], &[1, 1], 10);
        assert!(taken[1] >= 4950, "B keeps 99 % of its packets: {taken:?}");
        // A gets about the allotted part of the worker minus B's part (its cost per packet is
        // estimated with refusals at a quarter of a packet taken; here they cost a tenth).
        let a_ns = taken[0] * 100;
        assert!(a_ns < WINDOW_NS * 9 / 10 && a_ns > WINDOW_NS / 2, "{a_ns}");
    }

    #[test]
    fn expensive_packets_are_charged_their_time() {
        // A's packets cost 10× B's; both offer more than the worker does at equal weights:
        // each gets about half of the worker's time (refusing included), so A moves far fewer
        // packets than B.
        let (taken, time) = simulate(&[100, 1000], &[1000, 100], &[1, 1], 10);
        assert!((time[0] as f64 / time[1] as f64 - 1.0).abs() < 0.1, "A {} ns, B {} ns", time[0], time[1]);
        assert!(taken[0] * 5 < taken[1], "{taken:?}");
    }

    #[test]
    fn a_crowd_of_vrs_all_wanting_more_than_their_shares_alike_is_not_refused() {
        // 64 VRs, each offering 40 packets a round (2.6 workers' worth), their costs 90 to
        // 110 ns: refusing any of them would move no time to the others.
        let costs: Vec<u64> = (0..64).map(|v| 90 + v % 21).collect();
        let (taken, time) = simulate(&[40; 64], &costs, &[1; 64], 10);
        let refusing: u64 = (0..64).map(|v| time[v] - taken[v] * costs[v]).sum();
        assert!(refusing * 100 < WINDOW_NS, "{refusing} ns of the last window spent refusing: {taken:?}");
        let worked: u64 = (0..64).map(|v| taken[v] * costs[v]).sum();
        assert!(worked * 100 > WINDOW_NS * 95, "the worker forwarded for {worked} ns of {WINDOW_NS}");
    }

    #[test]
    fn a_flood_among_a_crowd_all_wanting_more_than_their_shares_is_held_to_its_share() {
        // Nine VRs of equal weight: eight want 1.2 times their ninth of the worker, the ninth
        // ten times. Served alike, the flood would take half of the worker.
        let mut offered = vec![133; 9];
        offered[8] = 1_111;
        let (taken, time) = simulate(&offered, &[100; 9], &[1; 9], 10);
        let share = WINDOW_NS / 9;
        // Its time includes refusing its own excess; what it got forwarded is its packets taken.
        assert!(taken[8] * 100 < share * 3 / 2, "the flood got {} ns against a share of {share}: {taken:?}", taken[8] * 100);
        for (v, &t) in time[..8].iter().enumerate() {
            assert!(t > share * 3 / 4, "VR {v} kept {t} ns of a share of {share}: {time:?}");
        }
    }

    #[test]
    fn weights_split_a_contended_worker() {
        // A small third VR keeps the headroom in force (without one, all of the window is
        // handed out and the split is the rings' as much as the weights').
        let (taken, _) = simulate(&[700, 700, 10], &[100, 100, 100], &[3, 1, 1], 10);
        // 3:1 to within the estimate of what refusing costs (B refuses more of its packets).
        let ratio = taken[0] as f64 / taken[1] as f64;
        assert!((2.2..3.8).contains(&ratio), "{taken:?}");
    }

    /// Progressive filling in small steps: the plain definition of weighted max-min fairness.
    fn reference(capacity: u64, demands: &[(u16, u64, u64)]) -> Vec<f64> {
        let mut got = vec![0.0; demands.len()];
        let mut left = capacity as f64;
        loop {
            let open: Vec<usize> = (0..demands.len()).filter(|&i| got[i] < demands[i].1 as f64).collect();
            if open.is_empty() || left <= 1e-6 {
                return got;
            }
            let w: f64 = open.iter().map(|&i| demands[i].2 as f64).sum();
            // The largest step that fills nobody past their demand nor the capacity.
            let step = open.iter().map(|&i| (demands[i].1 as f64 - got[i]) / demands[i].2 as f64).fold(left / w, f64::min);
            for &i in &open {
                got[i] += step * demands[i].2 as f64;
            }
            left -= step * w;
        }
    }

    proptest! {
        #[test]
        fn max_min_gives_each_vr_what_progressive_filling_gives_it(
            capacity in 1u64..10_000_000,
            demands in proptest::collection::vec((0u64..5_000_000, 1u64..8), 1..12),
        ) {
            let mut d: Vec<(u16, u64, u64)> = demands.iter().enumerate().map(|(i, &(x, w))| (i as u16, x, w)).collect();
            let want = reference(capacity, &d);
            max_min(capacity, &mut d);
            for (v, allowance, _) in d {
                let (demand, w) = (demands[v as usize].0, demands[v as usize].1);
                let fair = want[v as usize];
                if (demand as f64) <= fair + 1.0 {
                    // Satisfied: at least its demand.
                    prop_assert!(allowance + 1 >= demand, "vr {v}: {allowance} < demand {demand}");
                } else {
                    // Held back: its max-min share, to rounding.
                    prop_assert!((allowance as f64 - fair).abs() <= demands.len() as f64, "vr {v} (weight {w}): {allowance} against {fair}");
                }
            }
        }
    }
}

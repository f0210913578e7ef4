//! The throughput search, with MLRsearch's semantics (RFC 9971): a goal is a loss ratio, a goal
//! duration sum and an exceed ratio; a load is classified from all trials at that load, and the
//! goal's result (its conditional throughput) is the largest load classified a lower bound below
//! the smallest one classified an upper bound, once those two are within the goal's width.
//!
//! Classifying with the exceed ratio X and goal duration sum D: a trial is bad if its loss ratio
//! exceeds the goal's. A load is an upper bound once its bad trials last more than X·D (no more
//! good trials could change that), a lower bound once its good trials last at least (1 − X)·D,
//! and undecided until then: it is measured again. With X = 0.5 the verdict is the median trial's,
//! so one unlucky trial on a noisy machine does not move the result.
//!
//! Choosing the next load (the controller is ours; RFC 9971 leaves it free): the maximum load
//! first; below an upper bound with no lower bound yet, the rate that upper bound's trial
//! forwarded (the router's own estimate of its limit) or, if that is closer, a step down from it
//! that doubles each time; above a lower bound while the maximum load is the only upper bound, a
//! step up from it that doubles likewise (the estimate is usually close); between two measured
//! bounds, the middle, until the interval is narrower than the width. Goals share every trial: a load measured for one goal is already
//! classified for the next.

/// One search goal (RFC 9971 §4.6.2).
#[derive(Clone, Copy, Debug)]
pub struct Goal {
    pub name: &'static str,
    /// Largest loss ratio a good trial may have (0 for NDR).
    pub loss_ratio: f64,
    /// Seconds of trials a load needs to be classified.
    pub duration_sum: f64,
    /// Share of those seconds that may be bad on a lower bound.
    pub exceed_ratio: f64,
    /// Relative width the result's interval must shrink below.
    pub width: f64,
}

/// What the search needs of a trial.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trial {
    /// Frames per second offered.
    pub load: f64,
    pub duration: f64,
    /// Lost over offered.
    pub loss_ratio: f64,
}

/// The loads a search stays within, frames per second.
pub struct Settings {
    pub min_load: f64,
    pub max_load: f64,
}

/// Results in the order of the goals: `None` where even the minimum load is an upper bound.
pub struct Outcome {
    pub results: Vec<Option<f64>>,
    /// Every trial the search ran, the warm-up first (discarded: not classified).
    pub trials: Vec<Trial>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Class {
    Lower,
    Upper,
    Undecided,
}

/// Runs the warm-up trial at the maximum load, then each goal's search.
pub fn search(settings: &Settings, goals: &[Goal], mut measure: impl FnMut(f64) -> Result<Trial, String>) -> Result<Outcome, String> {
    let mut trials = vec![measure(settings.max_load)?];
    let mut results = Vec::with_capacity(goals.len());
    for goal in goals {
        results.push(search_goal(settings, goal, &mut trials, &mut measure)?);
    }
    Ok(Outcome { results, trials })
}

fn search_goal(
    settings: &Settings,
    goal: &Goal,
    trials: &mut Vec<Trial>,
    measure: &mut impl FnMut(f64) -> Result<Trial, String>,
) -> Result<Option<f64>, String> {
    // How far below the upper bound to try next while no lower bound is known: doubled each time.
    let mut step = 2.0 * goal.width;
    // And above a lower bound while the only upper bound is the maximum load, likewise upwards.
    let mut step_up = 2.0 * goal.width;
    loop {
        // The first trial is the warm-up: never classified.
        let before = bounds(goal, &trials[1..]);
        let next = match (before.lower, before.upper) {
            _ if before.undecided.is_some() => before.undecided.expect("checked"),
            (Some(lb), None) => return Ok(Some(lb)),
            (None, None) => settings.max_load,
            (None, Some(ub)) if ub <= settings.min_load => return Ok(None),
            (None, Some(ub)) => {
                let next = forwarding_rate(&trials[1..], ub).min(ub * (1.0 - step));
                step *= 2.0;
                next.max(settings.min_load)
            }
            (Some(lb), Some(ub)) if ub - lb <= goal.width * ub => return Ok(Some(lb)),
            (Some(lb), Some(ub)) if ub >= settings.max_load => {
                let next = ((lb + ub) / 2.0).min(lb * (1.0 + step_up));
                step_up *= 2.0;
                next
            }
            (Some(lb), Some(ub)) => (lb + ub) / 2.0,
        };
        trials.push(measure(next.round())?);
    }
}

struct Bounds {
    /// The largest lower bound below the smallest upper bound.
    lower: Option<f64>,
    upper: Option<f64>,
    /// A load between them that needs more trials.
    undecided: Option<f64>,
}

fn bounds(goal: &Goal, trials: &[Trial]) -> Bounds {
    let mut loads: Vec<f64> = trials.iter().map(|t| t.load).collect();
    loads.sort_by(f64::total_cmp);
    loads.dedup();
    let classes: Vec<(f64, Class)> = loads.iter().map(|&l| (l, classify(goal, trials, l))).collect();
    let upper = classes.iter().find(|(_, c)| *c == Class::Upper).map(|(l, _)| *l);
    let below = |l: f64| upper.is_none_or(|u| l < u);
    let lower = classes.iter().rev().find(|&&(l, c)| c == Class::Lower && below(l)).map(|(l, _)| *l);
    let undecided = classes.iter().find(|&&(l, c)| c == Class::Undecided && below(l) && lower.is_none_or(|lb| l > lb)).map(|(l, _)| *l);
    Bounds { lower, upper, undecided }
}

fn classify(goal: &Goal, trials: &[Trial], load: f64) -> Class {
    let (mut good, mut bad) = (0.0, 0.0);
    for t in trials.iter().filter(|t| t.load == load) {
        if t.loss_ratio > goal.loss_ratio {
            bad += t.duration;
        } else {
            good += t.duration;
        }
    }
    if bad > goal.exceed_ratio * goal.duration_sum {
        Class::Upper
    } else if good >= (1.0 - goal.exceed_ratio) * goal.duration_sum {
        Class::Lower
    } else {
        Class::Undecided
    }
}

/// The median rate the trials at `load` forwarded.
fn forwarding_rate(trials: &[Trial], load: f64) -> f64 {
    crate::report::median(trials.iter().filter(|t| t.load == load).map(|t| t.load * (1.0 - t.loss_ratio)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    const SETTINGS: Settings = Settings { min_load: 10_000.0, max_load: 2_000_000.0 };

    fn goals(duration_sum: f64) -> [Goal; 2] {
        [
            Goal { name: "NDR", loss_ratio: 0.0, duration_sum, exceed_ratio: 0.5, width: 0.01 },
            Goal { name: "PDR", loss_ratio: 0.005, duration_sum, exceed_ratio: 0.5, width: 0.01 },
        ]
    }

    /// A router that forwards `capacity` frames/s and loses `floor` of them at any load above `knee`.
    fn loss(load: f64, knee: f64, floor: f64, capacity: f64) -> f64 {
        let over = if load > capacity { (load - capacity) / load } else { 0.0 };
        if load > knee {
            over.max(floor)
        } else {
            over
        }
    }

    /// The brute-force reference: the largest load on a 0.01 % grid whose loss meets the goal.
    fn reference(goal: &Goal, curve: impl Fn(f64) -> f64) -> Option<f64> {
        let mut best = None;
        let mut load = SETTINGS.min_load;
        while load <= SETTINGS.max_load {
            if curve(load) <= goal.loss_ratio {
                best = Some(load);
            } else {
                break;
            }
            load *= 1.0001;
        }
        best
    }

    #[test]
    fn results_match_a_brute_force_scan_of_random_loss_curves() {
        let mut rng = SmallRng::seed_from_u64(56);
        for _ in 0..300 {
            let capacity = rng.gen_range(20_000.0..3_000_000.0);
            let knee = rng.gen_range(15_000.0..3_000_000.0);
            let floor = [0.0, 0.001, 0.003, 0.02][rng.gen_range(0..4)];
            let curve = |l: f64| loss(l, knee, floor, capacity);
            let goals = goals(1.0);
            let outcome =
                search(&SETTINGS, &goals, |load| Ok(Trial { load, duration: 1.0, loss_ratio: curve(load) })).expect("no trial fails");
            for (goal, result) in goals.iter().zip(&outcome.results) {
                let want = reference(goal, curve);
                let case = format!("{} capacity {capacity:.0} knee {knee:.0} floor {floor}: got {result:?}, want {want:?}", goal.name);
                match (want, result) {
                    (None, None) => {}
                    (Some(w), Some(r)) => {
                        assert!(curve(*r) <= goal.loss_ratio, "a result must meet its goal: {case}");
                        assert!(*r >= w * (1.0 - goal.width) - 1.0, "a result must be within the width of the truth: {case}");
                    }
                    _ => panic!("{case}"),
                }
            }
            assert!(outcome.trials.len() < 60, "{} trials", outcome.trials.len());
        }
    }

    #[test]
    fn a_minority_of_unlucky_trials_does_not_move_the_result() {
        let capacity = 400_000.0;
        for seed in 0..20 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let goals = goals(21.0);
            // One trial in five loses 1 % whatever the load: a neighbour's burst on a shared machine.
            let outcome = search(&SETTINGS, &goals, |load| {
                let unlucky = rng.gen_bool(0.2);
                Ok(Trial { load, duration: 1.0, loss_ratio: if unlucky { 0.01 } else { loss(load, f64::MAX, 0.0, capacity) } })
            })
            .expect("no trial fails");
            for r in &outcome.results {
                let r = r.expect("a result above the minimum load");
                assert!(r <= capacity && r >= capacity * 0.99, "seed {seed}: {r}");
            }
        }
    }

    #[test]
    fn a_router_losing_at_every_load_has_no_result_and_one_losing_at_none_has_the_maximum() {
        let goals = goals(1.0);
        let lossy = search(&SETTINGS, &goals, |load| Ok(Trial { load, duration: 1.0, loss_ratio: 0.01 })).expect("no trial fails");
        assert_eq!(lossy.results, [None, None]);
        let lossless = search(&SETTINGS, &goals, |load| Ok(Trial { load, duration: 1.0, loss_ratio: 0.0 })).expect("no trial fails");
        assert_eq!(lossless.results, [Some(SETTINGS.max_load), Some(SETTINGS.max_load)]);
        assert_eq!(lossless.trials.len(), 2, "the warm-up and one trial at the maximum load");
    }
}

//! When a faulted program may start again: 10 ms after its first fault, doubling with each
//! fault up to a second, and back to 10 ms once it has run a second without one.

use std::time::{Duration, Instant};

const FIRST: Duration = Duration::from_millis(10);
const LONGEST: Duration = Duration::from_secs(1);

pub struct Backoff {
    wait: Duration,
    /// Until when the program stays down.
    until: Option<Instant>,
    /// When it last started.
    started: Option<Instant>,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff { wait: FIRST, until: None, started: None }
    }
}

impl Backoff {
    /// The program faulted at `now`.
    pub fn fault(&mut self, now: Instant) {
        if self.started.is_some_and(|s| now.duration_since(s) >= LONGEST) {
            self.wait = FIRST;
        }
        self.until = Some(now + self.wait);
        self.wait = (self.wait * 2).min(LONGEST);
    }

    /// Whether the program may start at `now`.
    pub fn may_start(&self, now: Instant) -> bool {
        self.until.is_none_or(|u| now >= u)
    }

    pub fn started(&mut self, now: Instant) {
        self.started = Some(now);
        self.until = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_a_second_and_shrink_after_a_clean_second() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        assert!(b.may_start(t0));
        b.started(t0);
        let mut now = t0;
        let mut waits = Vec::new();
        for _ in 0..9 {
            b.fault(now);
            let mut wait = Duration::ZERO;
            while !b.may_start(now + wait) {
                wait += Duration::from_millis(1);
            }
            waits.push(wait.as_millis());
            now += wait;
            b.started(now);
        }
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        b.fault(now + Duration::from_secs(2));
        assert!(b.may_start(now + Duration::from_secs(2) + FIRST), "a clean second earns the short wait back");
    }
}

//! The prober of VRs' routing sessions: a thread that asks each VR's routing suite for its
//! adjacencies (`suite_query.rs`) every `INTERVAL`, for the VRs someone asked about in the
//! last `IDLE_AFTER`, and at once for a VR asked about first or with an answer older than
//! `STALE`. Readers take the last answer and never wait for a query: a hung daemon delays the
//! prober, not the API.

use crate::models::vr_health::Session;
use crate::suite_query::{self, Speaker};
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const INTERVAL: Duration = Duration::from_secs(10);
const STALE: Duration = Duration::from_secs(2);
const IDLE_AFTER: Duration = Duration::from_secs(600);

/// The last answer of one VR's suite.
#[derive(Clone)]
pub struct Probed {
    pub at: Instant,
    pub sessions: Vec<Session>,
    pub errors: Vec<String>,
}

pub struct Sessions {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// By VR name: a VR recreated under its name with another suite starts over.
    wanted: HashMap<String, Wanted>,
    stop: bool,
}

struct Wanted {
    speaker: Speaker,
    asked: Instant,
    due: Instant,
    probed: Option<Probed>,
}

impl Sessions {
    pub fn start() -> std::io::Result<Sessions> {
        let shared = Arc::new(Shared { state: Mutex::new(State::default()), wake: Condvar::new() });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new().name("pearl-sessions".into()).spawn(move || s.run())?;
        Ok(Sessions { shared, thread: Mutex::new(Some(thread)) })
    }

    /// The last answer for VR `vr`, whose control plane `speaker` speaks for, if there is one
    /// yet; asks the prober for a fresh one if it is missing or stale.
    pub fn read(&self, vr: &str, speaker: Speaker) -> Option<Probed> {
        let now = Instant::now();
        let mut st = self.shared.lock();
        let w = st.wanted.entry(vr.to_string()).or_insert_with(|| Wanted { speaker: speaker.clone(), asked: now, due: now, probed: None });
        if w.speaker != speaker {
            *w = Wanted { speaker, asked: now, due: now, probed: None };
        }
        w.asked = now;
        if w.probed.as_ref().is_some_and(|p| p.at.elapsed() >= STALE) {
            w.due = w.due.min(now);
        }
        let probed = w.probed.clone();
        if w.due <= now {
            self.shared.wake.notify_one();
        }
        probed
    }

    pub fn stop(&self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn run(&self) {
        let mut st = self.lock();
        while !st.stop {
            let now = Instant::now();
            st.wanted.retain(|_, w| w.asked.elapsed() < IDLE_AFTER);
            let due: Vec<(String, Speaker)> =
                st.wanted.iter().filter(|(_, w)| w.due <= now).map(|(vr, w)| (vr.clone(), w.speaker.clone())).collect();
            if due.is_empty() {
                let next = st.wanted.values().map(|w| w.due).min().map_or(INTERVAL, |d| d.saturating_duration_since(now));
                st = self.wake.wait_timeout(st, next).unwrap_or_else(|p| p.into_inner()).0;
                continue;
            }
            drop(st);
            for (vr, speaker) in due {
                let (sessions, errors) = suite_query::ask(&speaker);
                let at = Instant::now();
                let mut st = self.lock();
                if st.stop {
                    return;
                }
                // Unless the VR changed its suite meanwhile: then its answer is for the old one.
                if let Some(w) = st.wanted.get_mut(&vr).filter(|w| w.speaker == speaker) {
                    w.probed = Some(Probed { at, sessions, errors });
                    w.due = at + INTERVAL;
                }
            }
            st = self.lock();
        }
    }
}

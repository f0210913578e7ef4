//! The program of a VR whose program is not there (a plugin VR before its host attaches one):
//! its frames are dropped, counted as `program`.

use super::{Run, VrProgram};

pub struct Detached;

impl VrProgram for Detached {
    fn run(&self, _run: &mut Run<'_>) {}
}

//! The program of kernel and shared VRs: every frame goes to the VR's kernel, which forwards.

use super::{Decision, Run, VrProgram};
use crate::reasons::Exception;

pub struct KernelPath;

impl VrProgram for KernelPath {
    fn run(&self, run: &mut Run<'_>) {
        for i in 0..run.len() {
            run.decide(i, Decision::Slow(Exception::KernelVr));
        }
    }

    fn is_kernel_path(&self) -> bool {
        true
    }
}

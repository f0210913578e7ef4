//! `pearlctl exec VR -- CMD [ARG...]`: the researcher's login. Asks pearld which namespace holds
//! the VR, then becomes `ip netns exec NAMESPACE CMD...`, so the command's exit status, signals
//! and terminal are its own.

use crate::client::Client;
use crate::failure::{Failure, DAEMON};
use crate::vr;
use std::os::unix::process::CommandExt;
use std::process::Command;

pub fn run(client: &Client, name: &str, command: &[String]) -> Failure {
    let vr = match vr::get(client, name) {
        Ok(vr) => vr,
        Err(f) => return f,
    };
    let Some(namespace) = vr["namespace"].as_str() else {
        return Failure::new(DAEMON, format!("pearld did not say which namespace holds VR {name:?}"));
    };
    let err = Command::new("ip").args(["netns", "exec", namespace]).args(command).exec();
    Failure::new(DAEMON, format!("cannot run `ip netns exec {namespace}`: {err} (is iproute2 installed?)"))
}

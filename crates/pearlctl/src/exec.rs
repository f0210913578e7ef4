//! `pearlctl exec VR -- CMD [ARG...]`: the researcher's login. Asks pearld which namespace holds
//! the VR, then becomes `ip netns exec NAMESPACE CMD...`, so the command's exit status, signals
//! and terminal are its own. The VR's routing suite's shells find its daemons: `vtysh` gets the
//! VR's FRR pathspace, `birdc` its BIRD's socket.

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
    let bird = vr["control_plane"]["bird"]["socket"].as_str();
    let command = with_bird_socket(bird, &with_pathspace(name, command));
    let err = Command::new("ip").args(["netns", "exec", namespace]).args(command).exec();
    Failure::new(DAEMON, format!("cannot run `ip netns exec {namespace}`: {err} (is iproute2 installed?)"))
}

/// `command`, with `-N VR` after a `vtysh` that names no pathspace: each VR's FRR runs in its
/// own (`-N VR`, see pearl-vrproc's FRR suite), and a plain vtysh would look for the host's.
fn with_pathspace(vr: &str, command: &[String]) -> Vec<String> {
    let vtysh = command.first().is_some_and(|c| c.rsplit('/').next() == Some("vtysh"));
    let named = command.iter().any(|a| a == "-N" || a.starts_with("--pathspace") || (a.starts_with("-N") && a.len() > 2));
    let mut out = command.to_vec();
    if vtysh && !named {
        out.splice(1..1, ["-N".to_string(), vr.to_string()]);
    }
    out
}

/// `command`, with `-s SOCKET` after a `birdc` that names none: the VR's BIRD listens on a
/// socket of its own (`control_plane.bird.socket`), not on birdc's default.
fn with_bird_socket(socket: Option<&str>, command: &[String]) -> Vec<String> {
    let birdc = command.first().is_some_and(|c| c.rsplit('/').next() == Some("birdc"));
    let named = command.iter().any(|a| a.starts_with("-s"));
    let mut out = command.to_vec();
    if let Some(socket) = socket.filter(|_| birdc && !named) {
        out.splice(1..1, ["-s".to_string(), socket.to_string()]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn vtysh_gets_the_vrs_pathspace_unless_it_names_one() {
        assert_eq!(with_pathspace("red", &args(&["vtysh", "-c", "show ip route"])), args(&["vtysh", "-N", "red", "-c", "show ip route"]));
        assert_eq!(with_pathspace("red", &args(&["/usr/bin/vtysh"])), args(&["/usr/bin/vtysh", "-N", "red"]));
        assert_eq!(with_pathspace("red", &args(&["vtysh", "-N", "blue"])), args(&["vtysh", "-N", "blue"]));
        assert_eq!(with_pathspace("red", &args(&["ip", "route"])), args(&["ip", "route"]));
    }

    #[test]
    fn birdc_gets_the_vrs_socket_unless_it_names_one() {
        let sock = "/run/pearl/bird/red/bird.ctl";
        assert_eq!(with_bird_socket(Some(sock), &args(&["birdc", "show", "protocols"])), args(&["birdc", "-s", sock, "show", "protocols"]));
        assert_eq!(with_bird_socket(Some(sock), &args(&["birdc", "-s", "/x"])), args(&["birdc", "-s", "/x"]));
        assert_eq!(with_bird_socket(None, &args(&["birdc"])), args(&["birdc"]));
        assert_eq!(with_bird_socket(Some(sock), &args(&["vtysh"])), args(&["vtysh"]));
    }
}

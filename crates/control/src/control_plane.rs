//! `control_plane:` of a VR: the routing software pearld runs inside the VR's namespace.
//!
//! ```yaml
//! control_plane: {frr: {daemons: [staticd, ospfd, bgpd], config: red-frr.conf}}
//! control_plane: {bird: {config: red-bird.conf}}
//! control_plane: {command: [gobgpd, -f, red-gobgp.toml]}
//! ```
//!
//! FRR: zebra always runs and always starts first, as in FRR's own packaging: every other
//! daemon reaches the kernel through it. Listing it is allowed but not needed; the resolved
//! list has it first, the others in the order given. The config file is read at parse time: it
//! must exist, and its top-level sections must belong to listed daemons (`router bgp` needs
//! bgpd). BIRD: the file must exist; pearld has `bird -p` check it before the VR is made.
//! A command: a program with a `/` is found from the YAML file's directory, one without in
//! `PATH`, as a shell would; it runs in that directory.

use crate::at::At;
use crate::error::ConfigError;
use crate::grammar::{BirdSpec, ControlPlaneSpec, FrrSpec, Word};
use std::collections::HashMap;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The routing suite a VR runs. One per VR: two suites would fight over one kernel table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlPlane {
    Frr(FrrConfig),
    Bird(BirdConfig),
    Command(CommandConfig),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrrConfig {
    /// Daemon names, `zebra` first.
    pub daemons: Vec<String>,
    /// The integrated configuration (frr.conf), resolved against the YAML file's directory.
    pub config: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BirdConfig {
    /// bird.conf, resolved against the YAML file's directory.
    pub config: PathBuf,
}

/// A researcher's own routing daemon (GoBGP, ExaBGP, a script), supervised like FRR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandConfig {
    /// The program's path as found, then its arguments as given.
    pub argv: Vec<String>,
    /// The YAML file's directory, where it runs (its relative arguments mean what they say).
    pub dir: PathBuf,
}

/// The FRR daemons a VR may run. watchfrr is absent: pearld supervises the daemons itself.
pub const FRR_DAEMONS: &[&str] = &[
    "zebra", "staticd", "bgpd", "ospfd", "ospf6d", "ripd", "ripngd", "isisd", "fabricd", "bfdd", "pimd", "pim6d", "ldpd", "nhrpd",
    "eigrpd", "babeld", "pbrd", "vrrpd", "pathd",
];

pub(crate) fn parse_control_plane(c: &ControlPlaneSpec, at: At<'_>, base_dir: &Path) -> Result<ControlPlane, ConfigError> {
    let given: Vec<&str> = [("frr", c.frr.is_some()), ("bird", c.bird.is_some()), ("command", c.command.is_some())]
        .iter()
        .filter(|g| g.1)
        .map(|g| g.0)
        .collect();
    match (given.as_slice(), &c.frr, &c.bird, &c.command) {
        ([_], Some(frr), _, _) => parse_frr(frr, at.key("frr"), base_dir).map(ControlPlane::Frr),
        ([_], _, Some(bird), _) => parse_bird(bird, at.key("bird"), base_dir).map(ControlPlane::Bird),
        ([_], _, _, Some(command)) => parse_command(command, at.key("command"), base_dir).map(ControlPlane::Command),
        ([], ..) => Err(at.err("name one control plane: frr, bird, command")),
        _ => Err(at.err(format!("{} and {}: a VR runs one control plane (two would fight over its kernel table)", given[0], given[1]))),
    }
}

fn parse_bird(b: &BirdSpec, at: At<'_>, base_dir: &Path) -> Result<BirdConfig, ConfigError> {
    let (config, _) = readable_file(&b.config, at.key("config"), base_dir)?;
    Ok(BirdConfig { config })
}

fn parse_command(words: &[Word], at: At<'_>, base_dir: &Path) -> Result<CommandConfig, ConfigError> {
    if words.is_empty() {
        return Err(at.err("give the program to run, then its arguments"));
    }
    let mut argv = Vec::with_capacity(words.len());
    for (i, word) in words.iter().enumerate() {
        let at = at.index(i);
        // `[gobgpd, -p, 1790]`: numbers and words are arguments alike.
        let arg = word.text();
        if arg.contains('\0') {
            return Err(at.err("contains a NUL byte"));
        }
        argv.push(if i == 0 { program(at, &arg, base_dir)? } else { arg });
    }
    Ok(CommandConfig { argv, dir: base_dir.to_path_buf() })
}

/// The program's path: `name` with a `/` from `base_dir`, else the first executable file of
/// that name in `PATH`.
fn program(at: At<'_>, name: &str, base_dir: &Path) -> Result<String, ConfigError> {
    let executable = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if name.contains('/') {
        // `./speaker.sh` is the file itself (components() leaves out inner `.`s).
        let path: PathBuf = base_dir.join(name).components().collect();
        let meta = std::fs::metadata(&path).map_err(|e| at.err(format!("{}: {}", path.display(), os_text(&e))))?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(at.err(format!("{}: not an executable file", path.display())));
        }
        return Ok(path.to_string_lossy().into_owned());
    }
    let search = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string());
    search
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(name))
        .find(|p| executable(p))
        .map(|p| p.to_string_lossy().into_owned())
        .ok_or_else(|| at.err(format!("no program {name:?} in PATH ({search})")))
}

fn parse_frr(f: &FrrSpec, at: At<'_>, base_dir: &Path) -> Result<FrrConfig, ConfigError> {
    let daemons_at = at.key("daemons");
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut listed = Vec::new();
    for (i, name) in f.daemons.iter().flatten().enumerate() {
        let d = daemons_at.index(i);
        if !FRR_DAEMONS.contains(&name.as_str()) {
            return Err(d.err(format!("unknown FRR daemon {name:?} ({})", FRR_DAEMONS.join(", "))));
        }
        if let Some(first) = seen.insert(name, i) {
            return Err(d.err(format!("duplicate of {daemons_at}[{first}]")));
        }
        listed.push(name.clone());
    }
    if listed.is_empty() {
        return Err(daemons_at.err("list at least one FRR daemon"));
    }
    let mut daemons = vec!["zebra".to_string()];
    daemons.extend(listed.into_iter().filter(|d| d != "zebra"));
    let config_at = at.key("config");
    let (config, text) = readable_file(&f.config, config_at, base_dir)?;
    if let Some((line, text, daemon)) = unserved_section(&text, &daemons) {
        let file = format!("{}:{line}", config.display());
        return Err(config_at.err(format!("{file}: {text:?} needs {daemon}, which is not in {daemons_at}")));
    }
    Ok(FrrConfig { daemons, config })
}

/// Top-level sections of frr.conf and the daemon that reads each: FRR silently skips the
/// sections of daemons that do not run, so a VR would come up without that protocol.
const SECTIONS: &[(&[&str], &str)] = &[
    (&["ip", "route"], "staticd"),
    (&["ipv6", "route"], "staticd"),
    (&["router", "bgp"], "bgpd"),
    (&["router", "ospf"], "ospfd"),
    (&["router", "ospf6"], "ospf6d"),
    (&["router", "rip"], "ripd"),
    (&["router", "ripng"], "ripngd"),
    (&["router", "isis"], "isisd"),
    (&["router", "openfabric"], "fabricd"),
    (&["router", "eigrp"], "eigrpd"),
    (&["router", "babel"], "babeld"),
    (&["mpls", "ldp"], "ldpd"),
    (&["bfd"], "bfdd"),
];

/// The first top-level line (1-based number, text, daemon) whose daemon is not in `daemons`.
fn unserved_section<'t>(config: &'t str, daemons: &[String]) -> Option<(usize, &'t str, &'static str)> {
    config.lines().enumerate().find_map(|(i, line)| {
        if line.starts_with(char::is_whitespace) {
            return None;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let (_, daemon) = SECTIONS.iter().find(|(w, _)| words.starts_with(w))?;
        (!daemons.iter().any(|d| d == daemon)).then_some((i + 1, line.trim_end(), *daemon))
    })
}

/// Read now so that a VR whose daemons could not read their configuration is refused before
/// anything is created. Returns the resolved path and the text.
fn readable_file(file: &str, at: At<'_>, base_dir: &Path) -> Result<(PathBuf, String), ConfigError> {
    let path = base_dir.join(file);
    let refuse = |why: String| at.err(format!("{}: {why}", path.display()));
    let mut file = std::fs::File::open(&path).map_err(|e| refuse(os_text(&e)))?;
    let meta = file.metadata().map_err(|e| refuse(os_text(&e)))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file".to_string()));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| refuse(os_text(&e)))?;
    Ok((path, String::from_utf8_lossy(&bytes).into_owned()))
}

/// `limits.memory_mb`: below 32 MiB zebra alone would be killed before it starts.
pub(crate) fn memory_mb(v: i64, at: At<'_>) -> Result<u64, ConfigError> {
    let v = crate::fields::uint(v, 1 << 24, at)?;
    if v < 32 {
        return Err(at.err(format!("{v} MiB is too little for a control plane (at least 32)")));
    }
    Ok(v)
}

/// The system's message without Rust's " (os error N)" suffix, as `ls` or `cat` would say it.
pub(crate) fn os_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_config_in;

    const VR: &str = "vrs:
  - name: red
    interfaces: [{name: eth0, port: p0, mac: \"02:00:00:00:01:00\", addresses: [10.1.0.1/24]}]
";

    fn config(control_plane: &str) -> String {
        format!("ports: [{{name: p0, interface: pe0}}]\n{VR}    control_plane: {control_plane}\n")
    }

    /// A directory holding `red-frr.conf` and `bgp.conf`, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str) -> Dir {
            let d = std::env::temp_dir().join(format!("pearl-cp-{tag}-{}", std::process::id()));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("red-frr.conf"), "ip route 192.0.2.0/24 10.1.0.2\n").unwrap();
            // Indented lines belong to a section: only top-level ones name a daemon.
            std::fs::write(d.join("bgp.conf"), "interface eth0\n ip route 10.0.0.0/8 eth0\nrouter bgp 65001\n").unwrap();
            Dir(d)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn frr_resolves_against_the_base_dir_with_zebra_first() {
        let dir = Dir::new("ok");
        let c = parse_config_in(&config("{frr: {daemons: [staticd, bgpd], config: red-frr.conf}}"), &dir.0).unwrap();
        let want = FrrConfig { daemons: vec!["zebra".into(), "staticd".into(), "bgpd".into()], config: dir.0.join("red-frr.conf") };
        assert_eq!(c.vrs[0].control_plane, Some(ControlPlane::Frr(want)));
        let c = parse_config_in(&config("{frr: {daemons: [staticd, zebra], config: red-frr.conf}}"), &dir.0).unwrap();
        let Some(ControlPlane::Frr(f)) = &c.vrs[0].control_plane else { panic!() };
        assert_eq!(f.daemons, ["zebra", "staticd"], "a listed zebra moves to the front");
        let abs = format!("{{frr: {{daemons: [staticd], config: {}}}}}", dir.0.join("red-frr.conf").display());
        assert!(parse_config_in(&config(&abs), Path::new("/nonexistent")).is_ok(), "absolute paths ignore the base");
    }

    #[test]
    fn bird_and_commands_resolve_against_the_base_dir() {
        let dir = Dir::new("bird");
        let c = parse_config_in(&config("{bird: {config: red-frr.conf}}"), &dir.0).unwrap();
        assert_eq!(c.vrs[0].control_plane, Some(ControlPlane::Bird(BirdConfig { config: dir.0.join("red-frr.conf") })));
        let c = parse_config_in(&config("{command: [sh, -c, 'sleep 100', 7]}"), &dir.0).unwrap();
        let Some(ControlPlane::Command(cmd)) = &c.vrs[0].control_plane else { panic!("{:?}", c.vrs[0].control_plane) };
        assert!(cmd.argv[0].ends_with("/sh") && Path::new(&cmd.argv[0]).is_absolute(), "found in PATH: {:?}", cmd.argv);
        assert_eq!(cmd.argv[1..], ["-c", "sleep 100", "7"]);
        assert_eq!(cmd.dir, dir.0);
        let script = dir.0.join("speaker.sh");
        std::fs::write(&script, "#!/bin/sh\nexec sleep 100\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let c = parse_config_in(&config("{command: [./speaker.sh]}"), &dir.0).unwrap();
        let Some(ControlPlane::Command(cmd)) = &c.vrs[0].control_plane else { panic!() };
        assert_eq!(cmd.argv, [dir.0.join("speaker.sh").to_string_lossy()]);
    }

    #[test]
    fn no_control_plane_is_none() {
        let c = parse_config_in(&format!("ports: [{{name: p0, interface: pe0}}]\n{VR}"), Path::new("/")).unwrap();
        assert_eq!(c.vrs[0].control_plane, None);
    }

    #[test]
    fn errors_name_the_field() {
        let dir = Dir::new("err");
        let d = dir.0.display();
        let cases = [
            ("{frr: {daemons: [zebra], config: nope.conf}}".to_string(),
             format!("vrs[0].control_plane.frr.config: {d}/nope.conf: No such file or directory")),
            ("{frr: {daemons: [zebra], config: .}}".to_string(),
             format!("vrs[0].control_plane.frr.config: {d}/.: not a regular file")),
            ("{frr: {daemons: [zebra]}}".to_string(), "vrs[0].control_plane.frr.config: is required".to_string()),
            ("{frr: {daemons: [zebra, bgpd, bgpd], config: red-frr.conf}}".to_string(),
             "vrs[0].control_plane.frr.daemons[2]: duplicate of vrs[0].control_plane.frr.daemons[1]".to_string()),
            ("{frr: {daemons: [zebra, watchfrr], config: red-frr.conf}}".to_string(),
             "vrs[0].control_plane.frr.daemons[1]: unknown FRR daemon \"watchfrr\" (zebra, staticd,".to_string()),
            ("{frr: {daemons: [], config: red-frr.conf}}".to_string(),
             "vrs[0].control_plane.frr.daemons: list at least one FRR daemon".to_string()),
            ("{frr: {config: red-frr.conf}}".to_string(),
             "vrs[0].control_plane.frr.daemons: list at least one FRR daemon".to_string()),
            ("{frr: {daemons: zebra, config: red-frr.conf}}".to_string(),
             "vrs[0].control_plane.frr.daemons: expected a list".to_string()),
            ("{frr: {daemons: [zebra], config: red-frr.conf, conf: x}}".to_string(),
             "vrs[0].control_plane.frr.conf: unknown field (expected one of: daemons, config)".to_string()),
            ("{bgpd: {config: bird.conf}}".to_string(),
             "vrs[0].control_plane.bgpd: unknown field (expected one of: frr, bird, command)".to_string()),
            ("{bird: {config: nope.conf}}".to_string(),
             format!("vrs[0].control_plane.bird.config: {d}/nope.conf: No such file or directory")),
            ("{bird: {}}".to_string(), "vrs[0].control_plane.bird.config: is required".to_string()),
            ("{bird: {config: red-frr.conf, socket: x}}".to_string(),
             "vrs[0].control_plane.bird.socket: unknown field (expected one of: config)".to_string()),
            ("{bird: {config: red-frr.conf}, frr: {daemons: [staticd], config: red-frr.conf}}".to_string(),
             "vrs[0].control_plane: frr and bird: a VR runs one control plane".to_string()),
            ("{command: []}".to_string(), "vrs[0].control_plane.command: give the program to run".to_string()),
            ("{command: gobgpd}".to_string(), "vrs[0].control_plane.command: expected a list".to_string()),
            ("{command: [pearl-no-such-program, -x]}".to_string(),
             "vrs[0].control_plane.command[0]: no program \"pearl-no-such-program\" in PATH".to_string()),
            ("{command: [./red-frr.conf]}".to_string(),
             format!("vrs[0].control_plane.command[0]: {d}/red-frr.conf: not an executable file")),
            ("{command: [./nope.sh]}".to_string(),
             format!("vrs[0].control_plane.command[0]: {d}/nope.sh: No such file or directory")),
            ("{command: [sh, {a: 1}]}".to_string(), "vrs[0].control_plane.command[1]: expected a string".to_string()),
            ("{frr: {daemons: [staticd], config: bgp.conf}}".to_string(),
             format!("vrs[0].control_plane.frr.config: {d}/bgp.conf:3: \"router bgp 65001\" needs bgpd, which is not in vrs[0].control_plane.frr.daemons")),
            ("{frr: {daemons: [bgpd], config: red-frr.conf}}".to_string(),
             format!("vrs[0].control_plane.frr.config: {d}/red-frr.conf:1: \"ip route 192.0.2.0/24 10.1.0.2\" needs staticd")),
            ("{}".to_string(), "vrs[0].control_plane: name one control plane: frr, bird, command".to_string()),
            ("frr".to_string(), "vrs[0].control_plane: expected a mapping".to_string()),
        ];
        for (cp, want) in cases {
            let got = parse_config_in(&config(&cp), &dir.0).expect_err(&cp).to_string();
            assert!(got.starts_with(&want), "{cp}\nwant {want:?}\n got {got:?}");
        }
    }

    #[test]
    fn process_limits_default_and_are_checked() {
        let base = format!("ports: [{{name: p0, interface: pe0}}]\n{VR}");
        let l = parse_config_in(&base, Path::new("/")).unwrap().vrs[0].limits;
        assert_eq!((l.cpu_percent, l.memory_mb), (crate::DEFAULT_CPU_PERCENT, crate::DEFAULT_MEMORY_MB));
        let l = parse_config_in(&format!("{base}    limits: {{filters: 8}}\n"), Path::new("/")).unwrap().vrs[0].limits;
        assert_eq!((l.cpu_percent, l.memory_mb), (crate::DEFAULT_CPU_PERCENT, crate::DEFAULT_MEMORY_MB));
        let set = format!("{base}    limits: {{cpu_percent: 250, memory_mb: 2048}}\n");
        let l = parse_config_in(&set, Path::new("/")).unwrap().vrs[0].limits;
        assert_eq!((l.cpu_percent, l.memory_mb), (250, 2048));
        for (limits, want) in [
            ("{cpu_percent: 0}", "vrs[0].limits.cpu_percent: must be positive"),
            ("{cpu_percent: 200000}", "vrs[0].limits.cpu_percent: 200000 is out of range 0..=102400"),
            ("{memory_mb: 8}", "vrs[0].limits.memory_mb: 8 MiB is too little for a control plane (at least 32)"),
            ("{memory_mb: -1}", "vrs[0].limits.memory_mb: -1 is out of range"),
        ] {
            let got = parse_config_in(&format!("{base}    limits: {limits}\n"), Path::new("/")).unwrap_err().to_string();
            assert!(got.starts_with(want), "want {want:?}\n got {got:?}");
        }
    }

    #[test]
    fn parse_config_resolves_against_the_current_directory() {
        let got = crate::parse_config(&config("{frr: {daemons: [zebra], config: pearl-no-such.conf}}")).unwrap_err();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(got.message, format!("{}/pearl-no-such.conf: No such file or directory", cwd.display()));
    }
}

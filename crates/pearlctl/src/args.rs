//! The command line: options may come anywhere before `--`; what follows `--` is a command to
//! run (for `exec`). Each command says which options it takes (`Args::only`).

use crate::client::{Client, Target, DEFAULT_SOCKET};
use crate::failure::Failure;

pub struct Args {
    pub client: Client,
    pub json: bool,
    pub watch: bool,
    /// `-f FILE`: a VR to create.
    pub file: Option<String>,
    /// `-w FILE`: where a capture goes.
    pub write: Option<String>,
    /// `--interface SPEC` (vr create, repeated) or `--interface NAME` (capture).
    pub interfaces: Vec<String>,
    pub point: Option<String>,
    pub count: Option<String>,
    pub seconds: Option<String>,
    /// The command and its operands: `["vr", "show", "red"]`.
    pub words: Vec<String>,
    /// What follows `--`, if it was given.
    pub rest: Option<Vec<String>>,
    pub help: bool,
    /// The command-specific options given, as typed.
    given: Vec<String>,
}

/// Options every command takes.
const GLOBAL: &[&str] = &["--socket", "--url", "--token", "-h", "--help"];

pub fn parse(argv: impl IntoIterator<Item = String>) -> Result<Args, Failure> {
    parse_with(argv, std::env::var("PEARL_TOKEN").ok())
}

fn parse_with(argv: impl IntoIterator<Item = String>, env_token: Option<String>) -> Result<Args, Failure> {
    let (mut socket, mut url, mut token) = (None, None, None);
    let mut a = Args {
        client: Client::new(Target::Unix(String::new()), None),
        json: false,
        watch: false,
        file: None,
        write: None,
        interfaces: Vec::new(),
        point: None,
        count: None,
        seconds: None,
        words: Vec::new(),
        rest: None,
        help: false,
        given: Vec::new(),
    };
    let mut it = argv.into_iter();
    while let Some(o) = it.next() {
        let mut value = |what: &str| it.next().ok_or_else(|| Failure::usage(format!("{o} needs {what}")));
        match o.as_str() {
            "--" => {
                a.rest = Some(it.by_ref().collect());
            }
            "--socket" => socket = Some(value("a path")?),
            "--url" => url = Some(value("http://HOST:PORT")?),
            "--token" => token = Some(value("a token")?),
            "--json" => a.json = true,
            "--watch" => a.watch = true,
            "-f" | "--file" => a.file = Some(value("a file (YAML or JSON)")?),
            "-w" | "--write" => a.write = Some(value("a file (- for standard output)")?),
            "--interface" => a.interfaces.push(value("an interface")?),
            "--point" => a.point = Some(value("rx, tx or slow")?),
            "--count" => a.count = Some(value("a number of packets")?),
            "--seconds" => a.seconds = Some(value("a number of seconds")?),
            "-h" | "--help" => a.help = true,
            o if o.starts_with('-') && o.len() > 1 => return Err(Failure::usage(format!("unknown option {o:?}"))),
            _ => {
                a.words.push(o);
                continue;
            }
        }
        if !GLOBAL.contains(&o.as_str()) && o != "--" {
            a.given.push(o);
        }
    }
    let target = match (socket, url) {
        (Some(_), Some(_)) => return Err(Failure::usage("give --socket or --url, not both")),
        (_, Some(u)) => Target::from_url(&u)?,
        (s, None) => Target::Unix(s.unwrap_or_else(|| DEFAULT_SOCKET.to_string())),
    };
    let token = token.or(env_token).filter(|t| !t.is_empty());
    a.client = Client::new(target, token);
    Ok(a)
}

impl Args {
    /// Refuses the options `command` does not take.
    pub fn only(&self, command: &str, allowed: &[&str]) -> Result<(), Failure> {
        match self.given.iter().find(|o| !allowed.contains(&o.as_str())) {
            Some(o) => Err(Failure::usage(format!("{o} does not go with {command}"))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Args, Failure> {
        parse_with(s.split_whitespace().map(String::from), None)
    }

    #[test]
    fn options_may_come_anywhere_before_the_double_dash() {
        let a = parse_str("vr --json show red --socket /tmp/s").unwrap();
        assert_eq!(a.words, ["vr", "show", "red"]);
        assert!(a.json && matches!(a.client.target, Target::Unix(ref p) if p == "/tmp/s"));
        let a = parse_str("--url http://127.0.0.1:9 exec red -- ip --json addr").unwrap();
        assert_eq!(a.words, ["exec", "red"]);
        assert_eq!(a.rest.unwrap(), ["ip", "--json", "addr"]);
        assert!(!a.json);
    }

    #[test]
    fn bad_options_are_usage_errors() {
        for bad in ["stats --frobnicate", "stats --socket", "--socket a --url http://h:1 stats", "--url ftp://h:1 stats", "capture red -w"]
        {
            assert_eq!(parse_str(bad).err().map(|f| f.code), Some(crate::failure::USAGE), "{bad}");
        }
    }

    #[test]
    fn each_command_takes_only_its_own_options() {
        let a = parse_str("capture red --point rx -w x.pcap --token t --socket s").unwrap();
        assert!(a.only("capture", &["--point", "-w"]).is_ok());
        assert!(a.only("vr list", &["--json"]).unwrap_err().message.contains("--point does not go with vr list"));
    }

    #[test]
    fn the_token_comes_from_the_option_or_the_environment() {
        let a = parse_with(["--token".into(), "abc".into(), "stats".into()], Some("env".into())).unwrap();
        assert_eq!(a.client.token.as_deref(), Some("abc"));
        let a = parse_with(["stats".into()], Some("env".into())).unwrap();
        assert_eq!(a.client.token.as_deref(), Some("env"));
        let a = parse_with(["stats".into()], Some(String::new())).unwrap();
        assert_eq!(a.client.token, None);
    }
}

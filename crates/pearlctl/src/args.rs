//! The command line: options may come anywhere before `--`; what follows `--` is a command to
//! run (for `exec`).

use crate::client::{Target, DEFAULT_SOCKET};
use crate::failure::Failure;

pub struct Args {
    pub target: Target,
    pub json: bool,
    pub watch: bool,
    /// The command and its operands: `["vr", "show", "red"]`.
    pub words: Vec<String>,
    /// What follows `--`, if it was given.
    pub rest: Option<Vec<String>>,
    pub help: bool,
}

pub fn parse(argv: impl IntoIterator<Item = String>) -> Result<Args, Failure> {
    let (mut socket, mut url) = (None, None);
    let mut args = Args {
        target: Target::Unix(String::new()),
        json: false,
        watch: false,
        words: Vec::new(),
        rest: None,
        help: false,
    };
    let mut it = argv.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--" => {
                args.rest = Some(it.by_ref().collect());
            }
            "--socket" => socket = Some(it.next().ok_or_else(|| Failure::usage("--socket needs a path"))?),
            "--url" => url = Some(it.next().ok_or_else(|| Failure::usage("--url needs http://HOST:PORT"))?),
            "--json" => args.json = true,
            "--watch" | "-w" => args.watch = true,
            "-h" | "--help" => args.help = true,
            o if o.starts_with('-') => return Err(Failure::usage(format!("unknown option {o:?}"))),
            _ => args.words.push(a),
        }
    }
    args.target = match (socket, url) {
        (Some(_), Some(_)) => return Err(Failure::usage("give --socket or --url, not both")),
        (_, Some(u)) => Target::from_url(&u)?,
        (s, None) => Target::Unix(s.unwrap_or_else(|| DEFAULT_SOCKET.to_string())),
    };
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Args, Failure> {
        parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn options_may_come_anywhere_before_the_double_dash() {
        let a = parse_str("vr --json show red --socket /tmp/s").unwrap();
        assert_eq!(a.words, ["vr", "show", "red"]);
        assert!(a.json && matches!(a.target, Target::Unix(ref p) if p == "/tmp/s"));
        let a = parse_str("--url http://127.0.0.1:9 exec red -- ip --json addr").unwrap();
        assert_eq!(a.words, ["exec", "red"]);
        assert_eq!(a.rest.unwrap(), ["ip", "--json", "addr"]);
        assert!(!a.json);
    }

    #[test]
    fn bad_options_are_usage_errors() {
        for bad in
            ["stats --frobnicate", "stats --socket", "--socket a --url http://h:1 stats", "--url ftp://h:1 stats"]
        {
            assert_eq!(parse_str(bad).err().map(|f| f.code), Some(crate::failure::USAGE), "{bad}");
        }
    }
}

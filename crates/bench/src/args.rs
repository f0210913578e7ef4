//! A tiny `--flag value` parser: the benchmarks take a handful of numeric options and an unknown
//! or malformed one must be refused by name.

use std::collections::HashMap;
use std::str::FromStr;

pub struct Args {
    values: HashMap<String, String>,
}

impl Args {
    /// Parses `--name value` pairs, refusing names outside `known`.
    pub fn parse(argv: &[String], known: &[&str]) -> Result<Args, String> {
        let mut values = HashMap::new();
        let mut it = argv.iter();
        while let Some(flag) = it.next() {
            let name = flag.strip_prefix("--").ok_or_else(|| format!("unexpected argument {flag:?}"))?;
            if !known.contains(&name) {
                return Err(format!("unknown option --{name} (known: --{})", known.join(", --")));
            }
            let value = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
            values.insert(name.to_string(), value.clone());
        }
        Ok(Args { values })
    }

    pub fn get<T: FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.values.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("--{name}: cannot parse {v:?}")),
        }
    }

    pub fn required(&self, name: &str) -> Result<&str, String> {
        self.values.get(name).map(String::as_str).ok_or_else(|| format!("--{name} is required"))
    }
}

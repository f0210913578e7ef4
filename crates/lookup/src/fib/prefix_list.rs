//! Reading route tables in the "one prefix per line" format of the shared BGP snapshot.

use super::prefix::{Prefix, PrefixError};
use core::fmt;
use std::io::BufRead;

/// The prefixes of a file, split by family, in file order.
#[derive(Debug, Default)]
pub struct PrefixList {
    pub v4: Vec<Prefix<u32>>,
    pub v6: Vec<Prefix<u128>>,
}

#[derive(Debug)]
pub enum PrefixListError {
    Io(std::io::Error),
    Line { line: usize, error: PrefixError },
}

impl fmt::Display for PrefixListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefixListError::Io(e) => write!(f, "reading the prefix list: {e}"),
            PrefixListError::Line { line, error } => write!(f, "line {line}: {error}"),
        }
    }
}

impl std::error::Error for PrefixListError {}

/// Parses one prefix per line (CRLF or LF; blank lines and `#` comments skipped); the family is
/// told by the address.
pub fn read_prefix_list(reader: impl BufRead) -> Result<PrefixList, PrefixListError> {
    let mut list = PrefixList::default();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(PrefixListError::Io)?;
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let at = |error| PrefixListError::Line { line: i + 1, error };
        if text.contains(':') {
            list.v6.push(text.parse().map_err(at)?);
        } else {
            list.v4.push(text.parse().map_err(at)?);
        }
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_families_and_names_the_bad_line() {
        let text = "1.0.0.0/24\r\n\r\n# comment\n2001:db8::/32\r\n10.0.0.0/8\n";
        let list = read_prefix_list(text.as_bytes()).unwrap();
        assert_eq!(list.v4.len(), 2);
        assert_eq!(list.v6.len(), 1);
        let err = read_prefix_list("1.0.0.0/24\n1.0.0.1/24\n".as_bytes()).unwrap_err();
        assert_eq!(err.to_string(), "line 2: prefix 1.0.0.1/24 has bits set beyond its length");
    }
}

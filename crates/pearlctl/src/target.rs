//! Where pearld's API is: its Unix socket (the default), or its TCP address from `--url`, in TLS
//! when the URL is `https`.

use crate::failure::Failure;
use crate::tls::TlsTarget;

pub const DEFAULT_SOCKET: &str = "/run/pearl/pearl.sock";

pub enum Target {
    Unix(String),
    /// `HOST:PORT`, in TLS when the URL is `https`.
    Tcp(String, Option<TlsTarget>),
}

impl Target {
    /// `https://HOST:PORT` or `http://HOST:PORT` (a trailing `/` is allowed); `ca` is the PEM
    /// file that vouches for an https server's certificate.
    pub fn from_url(url: &str, ca: Option<&str>) -> Result<Target, Failure> {
        let (rest, tls) = match (url.strip_prefix("https://"), url.strip_prefix("http://")) {
            (Some(rest), _) => (rest, true),
            (None, Some(rest)) => (rest, false),
            _ => return Err(Failure::usage(format!("--url {url:?}: use https://HOST:PORT or http://HOST:PORT"))),
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        let Some((host, _)) =
            authority.rsplit_once(':').filter(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok() && !authority.contains('/'))
        else {
            return Err(Failure::usage(format!("--url {url:?}: use https://HOST:PORT, e.g. https://127.0.0.1:8443")));
        };
        if ca.is_some() && !tls {
            return Err(Failure::usage(format!("--ca: {url} is not https")));
        }
        let tls = if tls { Some(TlsTarget::new(host, ca)?) } else { None };
        Ok(Target::Tcp(authority.to_string(), tls))
    }

    /// As the user named it, for messages.
    pub fn describe(&self) -> String {
        match self {
            Target::Unix(p) => p.clone(),
            Target::Tcp(a, Some(_)) => format!("https://{a}"),
            Target::Tcp(a, None) => format!("http://{a}"),
        }
    }

    /// What the `Host` header says.
    pub fn host(&self) -> &str {
        match self {
            Target::Unix(_) => "pearld",
            Target::Tcp(a, _) => a,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_https_or_http_host_port() {
        assert!(matches!(Target::from_url("http://127.0.0.1:8080/", None), Ok(Target::Tcp(a, None)) if a == "127.0.0.1:8080"));
        assert!(matches!(Target::from_url("http://[::1]:80", None), Ok(Target::Tcp(a, None)) if a == "[::1]:80"));
        assert!(matches!(Target::from_url("https://[::1]:443", None), Ok(Target::Tcp(a, Some(_))) if a == "[::1]:443"));
        assert!(matches!(Target::from_url("https://pearl.example:8443/", None), Ok(Target::Tcp(_, Some(_)))));
        for bad in ["127.0.0.1:80", "ftp://h:1", "http://h", "http://h:x", "http://h:1/v1", "https://:1"] {
            assert_eq!(Target::from_url(bad, None).err().map(|f| f.code), Some(crate::failure::USAGE), "{bad}");
        }
        let ca = concat!(env!("CARGO_MANIFEST_DIR"), "/../control/tests/data/tls-a.pem");
        assert!(matches!(Target::from_url("https://127.0.0.1:1", Some(ca)), Ok(Target::Tcp(_, Some(_)))));
        let refused = |url, ca| Target::from_url(url, Some(ca)).err().map(|f| (f.code, f.message)).unwrap();
        assert!(refused("http://127.0.0.1:1", ca).1.contains("is not https"));
        assert!(refused("https://127.0.0.1:1", "/nonexistent.pem").1.starts_with("--ca /nonexistent.pem"));
        let key = concat!(env!("CARGO_MANIFEST_DIR"), "/../control/tests/data/tls-a.key");
        assert!(refused("https://127.0.0.1:1", key).1.contains("holds no certificate"));
    }
}

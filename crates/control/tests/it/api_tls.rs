//! `api.tls`: the TCP API's certificate and key are checked with the configuration, by building
//! the server's TLS settings from them; each mistake names its field and file. The files in
//! `data/` are two self-signed certificates (`tls-a`, `tls-b`) made once with openssl.

use pearl_control::parse_config_in;
use std::path::Path;

const VR: &str = "ports: [{name: p0, interface: q0, driver: af_packet}]
vrs:
  - name: v
    interfaces: [{name: eth0, port: p0, mac: \"02:00:00:00:01:00\", addresses: [10.1.0.1/24]}]
";

fn data() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data"))
}

fn with_tls(tls: &str) -> String {
    format!("api: {{tls: {tls}}}\n{VR}")
}

fn refused(tls: &str) -> String {
    match parse_config_in(&with_tls(tls), data()) {
        Ok(_) => panic!("accepted: {tls}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_certificate_with_its_key_is_taken_with_names_relative_to_the_files_directory() {
    let c = parse_config_in(&with_tls("{certificate: tls-a.pem, key: tls-a.key}"), data()).unwrap();
    let tls = c.api_tls.expect("api.tls is kept");
    assert_eq!(tls.certificate, data().join("tls-a.pem"));
    assert_eq!(tls.key, data().join("tls-a.key"));
    let server = tls.server_config().unwrap();
    assert_eq!(server.alpn_protocols, vec![b"http/1.1".to_vec()]);
    assert!(parse_config_in(VR, data()).unwrap().api_tls.is_none());
}

#[test]
fn mistakes_are_refused_naming_the_field_and_the_file() {
    let cases = [
        ("{certificate: tls-a.pem}", "api.tls.key: is required"),
        ("{key: tls-a.key}", "api.tls.certificate: is required"),
        ("{certificate: tls-a.pem, key: tls-a.key, ca: x}", "api.tls"),
        ("{certificate: missing.pem, key: tls-a.key}", "api.tls.certificate: "),
        ("{certificate: tls-a.key, key: tls-a.key}", "holds no certificate"),
        ("{certificate: tls-a.pem, key: tls-a.pem}", "holds no private key"),
        ("{certificate: tls-a.pem, key: tls-b.key}", "api.tls.key: "),
        ("{certificate: tls-a.pem, key: tls-b.key}", "is not the key of"),
    ];
    for (tls, expected) in cases {
        let e = refused(tls);
        assert!(e.contains(expected), "{tls}: {e}");
    }
    assert!(refused("{certificate: missing.pem, key: tls-a.key}").contains("missing.pem: No such file"));
}

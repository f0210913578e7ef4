"""Issue 14: the TCP API over TLS. With `api: {tls: {certificate, key}}` pearld serves
`--api-tcp` as HTTPS only, so tokens never cross it in clear text; pearlctl reaches it with
`--url https://...` and `--ca`; a certificate renewed in place serves the next client. Without a
certificate, plain HTTP is served on a loopback address only, or anywhere with
`--api-tcp-plain`; a certificate and key that do not belong together are refused at start."""

import hashlib
import os
import ssl
import subprocess
import sys
import time

from netns import Network
from test_api import free_port

ADMIN = "adm-0123456789abcdef0123"

# Run inside pearld's namespace: one request over TLS, trusting `ca`; prints the hash of the
# certificate the server showed, then the answer's status line.
FETCH_TLS = """
import hashlib, socket, ssl, sys
port, ca, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
    with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        s.sendall(f"GET /v1/vrs HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer {token}\\r\\n\\r\\n".encode())
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
        print(hashlib.sha256(s.getpeercert(True)).hexdigest())
        print(reply.split(b"\\r\\n", 1)[0].decode())
        print(reply.split(b"\\r\\n\\r\\n", 1)[1].decode())
"""

# Plain HTTP to `port`: prints what came back (repr), whatever it is.
FETCH_PLAIN = """
import socket, sys
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) as s:
    s.sendall(b"GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    reply = b""
    try:
        while chunk := s.recv(65536):
            reply += chunk
    except OSError:
        pass
    print(repr(reply[:200]))
"""


def make_certificate(directory, name):
    """A self-signed certificate for 127.0.0.1, as an operator makes one with openssl."""
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN={name}",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def fingerprint(cert):
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    return hashlib.sha256(der).hexdigest()


def config(prefix, api=""):
    return f"""{api}
ports: [{{name: p0, interface: q0, driver: af_packet}}]
vrs:
  - name: {prefix}-v
    interfaces: [{{name: eth0, port: p0, mac: "02:00:00:00:01:00", addresses: [10.1.0.1/24]}}]
"""


def in_ns(ns, code, *args):
    return subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code, *map(str, args)],
                          capture_output=True, text=True, timeout=30)


def test_the_tcp_api_serves_https_with_the_configured_certificate_and_takes_a_renewed_one(bin_dir, tmp_path):
    n = Network(f"tt{os.getpid() % 100000}")
    try:
        n.host("a", "q0", "02:aa:00:00:00:01")
        first = make_certificate(tmp_path, "first")
        port = free_port(n.router)
        # Relative names: taken from the configuration file's directory.
        api = f"api: {{admin_token: {ADMIN}, tls: {{certificate: first.pem, key: first.key}}}}"
        n.start_pearld(bin_dir, config(n.prefix, api), tmp_path, extra_args=["--api-tcp", f"127.0.0.1:{port}"])
        assert f"API and dashboard on https://127.0.0.1:{port}/" in (tmp_path / "pearld.log").read_text()

        done = in_ns(n.router, FETCH_TLS, port, first[0], ADMIN)
        assert done.returncode == 0, done.stderr
        shown, status, body = done.stdout.split("\n", 2)
        assert shown == fingerprint(first[0])
        assert status == "HTTP/1.1 200 OK" and f"{n.prefix}-v" in body, done.stdout

        url = f"https://127.0.0.1:{port}"
        ctl = [str(bin_dir / "pearlctl"), "--url", url, "--token", ADMIN]
        listed = subprocess.run(["ip", "netns", "exec", n.router, *ctl, "--ca", str(first[0]), "vr", "list", "--json"],
                                capture_output=True, text=True, timeout=30)
        assert listed.returncode == 0, listed.stderr
        assert f"{n.prefix}-v" in listed.stdout
        # A certificate nobody vouched for: pearlctl refuses to send the token to it.
        untrusted = subprocess.run(["ip", "netns", "exec", n.router, *ctl, "vr", "list"], capture_output=True, text=True,
                                   timeout=30)
        assert untrusted.returncode == 1 and "certificate" in untrusted.stderr.lower(), untrusted.stderr

        # Plain HTTP on the HTTPS port gets no HTTP answer (the token it carried is not read).
        plain = in_ns(n.router, FETCH_PLAIN, port)
        assert "HTTP/1.1" not in plain.stdout, plain.stdout

        # Renewed in place, as certbot or an operator's cron would: the next client sees it.
        second = make_certificate(tmp_path, "second")
        os.replace(second[1], first[1])
        os.replace(second[0], first[0])
        time.sleep(0.05)
        done = in_ns(n.router, FETCH_TLS, port, first[0], ADMIN)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split("\n", 1)[0] == fingerprint(first[0])
        assert n.pearld.poll() is None
    finally:
        n.close()


def test_plain_http_off_loopback_needs_the_explicit_flag_and_a_mismatched_key_is_refused(bin_dir, tmp_path):
    n = Network(f"tu{os.getpid() % 100000}")
    try:
        n.host("a", "q0", "02:aa:00:00:00:01")
        cfg = tmp_path / "c.yaml"
        cfg.write_text(config(n.prefix))
        port = free_port(n.router)
        pearld = ["ip", "netns", "exec", n.router, str(bin_dir / "pearld"), "--config", str(cfg),
                  "--api", str(tmp_path / "s.sock"), "--state", str(tmp_path / "state")]
        refused = subprocess.run([*pearld, "--api-tcp", f"0.0.0.0:{port}"], capture_output=True, text=True, timeout=30)
        assert refused.returncode == 2, refused.stderr
        assert f"--api-tcp 0.0.0.0:{port}" in refused.stderr and "api.tls" in refused.stderr
        assert "--api-tcp-plain" in refused.stderr
        assert f"{n.prefix}-v" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout

        a, b = make_certificate(tmp_path, "a"), make_certificate(tmp_path, "b")
        cfg.write_text(config(n.prefix, f"api: {{tls: {{certificate: {a[0]}, key: {b[1]}}}}}"))
        mismatched = subprocess.run([*pearld, "--api-tcp", f"0.0.0.0:{port}"], capture_output=True, text=True, timeout=30)
        assert mismatched.returncode == 2 and "api.tls.key" in mismatched.stderr, mismatched.stderr
        assert "is not the key of" in mismatched.stderr

        n.start_pearld(bin_dir, config(n.prefix), tmp_path, extra_args=["--api-tcp", f"0.0.0.0:{port}", "--api-tcp-plain"])
        plain = in_ns(n.router, FETCH_PLAIN, port)
        assert "HTTP/1.1 200" in plain.stdout, plain.stdout
    finally:
        n.close()

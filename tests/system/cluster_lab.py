"""A PEARL cluster on one machine: a real 3-member etcd on the address of a bridge in the root
namespace, and three pearld (`--cluster ... --node nN`), each in its own namespace with an
underlay veth into that bridge. Every name starts with the given prefix; `close()` removes
everything by name and pid, whatever happened. One machine has one set of namespace names, so
a node's "death" that frees its VRs for another node (the machine gone) is `kill_node(...,
machine=True)`: pearld killed and its VRs' and hosts' namespaces removed with it."""

import json
import os
import signal
import subprocess
import time

from frr_host import wait_until
from netns import remove_left_by, remove_netns, sh


class Cluster:
    def __init__(self, bin_dir, tmp_path, prefix="c62", nodes=3, lease_ttl=5, base_port=23790):
        self.bin_dir, self.tmp, self.prefix, self.lease_ttl = bin_dir, tmp_path, prefix, lease_ttl
        self.bridge = f"{prefix}br"
        self.etcd = {}
        self.pearld = {}
        self.node_ns = {f"n{i}": f"{prefix}n{i}" for i in range(1, nodes + 1)}
        self.extra_netns = set()
        self.gateway = "10.62.0.254"
        self.urls = ",".join(f"http://{self.gateway}:{base_port + i}" for i in range(3))
        self.base_port = base_port
        try:
            sh("ip", "link", "add", self.bridge, "type", "bridge")
            sh("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            sh("ip", "link", "set", self.bridge, "up")
            for i in range(3):
                self.start_etcd(i)
            self.wait_etcd()
            for i, (node, ns) in enumerate(self.node_ns.items(), start=1):
                sh("ip", "netns", "add", ns)
                sh("ip", "link", "add", f"{prefix}b{i}", "type", "veth", "peer", "name", f"{prefix}u{i}", "netns", ns)
                sh("ip", "link", "set", f"{prefix}b{i}", "master", self.bridge, "up")
                sh("ip", "addr", "add", f"10.62.0.{i}/24", "dev", f"{prefix}u{i}", ns=ns)
                sh("ip", "link", "set", f"{prefix}u{i}", "up", ns=ns)
                sh("ip", "link", "set", "lo", "up", ns=ns)
            for node in self.node_ns:
                self.start_node(node)
        except BaseException:
            self.close()
            raise

    # etcd ------------------------------------------------------------------------------------

    def start_etcd(self, i):
        name = f"{self.prefix}e{i}"
        peers = ",".join(f"{self.prefix}e{j}=http://127.0.0.1:{self.base_port + 10 + j}" for j in range(3))
        data = self.tmp / f"{name}.etcd"
        log = open(self.tmp / f"{name}.log", "a")
        self.etcd[i] = subprocess.Popen(
            ["etcd", "--name", name, "--data-dir", str(data),
             "--listen-client-urls", f"http://{self.gateway}:{self.base_port + i}",
             "--advertise-client-urls", f"http://{self.gateway}:{self.base_port + i}",
             "--listen-peer-urls", f"http://127.0.0.1:{self.base_port + 10 + i}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.base_port + 10 + i}",
             "--initial-cluster", peers, "--initial-cluster-state", "new", "--initial-cluster-token", self.prefix],
            stdout=log, stderr=subprocess.STDOUT)

    def etcdctl(self, *args, check=True):
        env = dict(os.environ, ETCDCTL_API="3")
        done = subprocess.run(["etcdctl", "--endpoints", self.urls, *map(str, args)], capture_output=True, text=True,
                              env=env, timeout=30)
        if check and done.returncode != 0:
            raise AssertionError(f"etcdctl {' '.join(map(str, args))}: {done.stderr}")
        return done.stdout + done.stderr if args[0] == "endpoint" else done.stdout

    def wait_etcd(self):
        wait_until("etcd healthy", 30, lambda: self.etcdctl("endpoint", "health", check=False).count("is healthy") == 3,
                   interval=0.3)

    def keys(self, prefix):
        """{key: value} under `prefix`."""
        out = self.etcdctl("get", "--prefix", prefix, "-w", "json")
        kvs = json.loads(out).get("kvs", [])
        import base64
        return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", "")).decode() for kv in kvs}

    # pearld ----------------------------------------------------------------------------------

    def api(self, node):
        return self.tmp / f"{node}.sock"

    def start_node(self, node):
        cfg = self.tmp / f"{node}.yaml"
        if not cfg.exists():
            cfg.write_text("vrs: []\n")
        log = open(self.tmp / f"{node}.log", "a")
        state = self.tmp / f"{node}.state"
        state.mkdir(exist_ok=True)
        self.pearld[node] = subprocess.Popen(
            ["ip", "netns", "exec", self.node_ns[node], str(self.bin_dir / "pearld"), "--config", str(cfg), "--api",
             str(self.api(node)), "--state", str(state), "--cluster", self.urls, "--node", node,
             "--lease-ttl", str(self.lease_ttl)],
            stdout=log, stderr=subprocess.STDOUT)
        self.wait_api(node)

    def wait_api(self, node, timeout=30):
        def up():
            if self.pearld[node].poll() is not None and not self.pid(node):
                raise AssertionError(f"pearld {node} exited: {self.log(node)[-3000:]}")
            return self.ctl(node, "node", "list", "--json", check=False).returncode == 0
        wait_until(f"pearld {node} answering", timeout, up, interval=0.2)

    def log(self, node):
        return (self.tmp / f"{node}.log").read_text()

    def pid(self, node):
        """pearld's pid on `node` (it executes itself again over its VRs on a port change, so
        the process the test started may have been replaced by the same pid's new image)."""
        out = sh("ip", "netns", "pids", self.node_ns[node], check=False).stdout.split()
        for p in out:
            try:
                cmd = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
                exe = os.readlink(f"/proc/{p}/exe")
            except OSError:
                continue
            # After a restart over its VRs its command line starts with /proc/self/exe.
            if exe.endswith("pearld") and b"--node" in cmd and node.encode() in cmd and b"--hold-taps" not in cmd:
                return int(p)
        return None

    def ctl(self, node, *args, check=True):
        done = subprocess.run([str(self.bin_dir / "pearlctl"), "--socket", str(self.api(node)), *map(str, args)],
                              capture_output=True, text=True, timeout=60)
        if check and done.returncode != 0:
            raise AssertionError(f"pearlctl@{node} {' '.join(map(str, args))}: {done.returncode} {done.stderr}")
        return done

    def json(self, node, *args):
        """A read command's answer. A pearld that adds or removes a port (a tunnel, a host's
        veth) starts again over its VRs and drops the connections in flight: asked again."""
        deadline = time.time() + 15
        while True:
            done = self.ctl(node, *args, "--json", check=False)
            if done.returncode == 0 or time.time() > deadline:
                break
            time.sleep(0.2)
        if done.returncode != 0:
            raise AssertionError(f"pearlctl@{node} {' '.join(map(str, args))}: {done.returncode} {done.stderr}")
        return json.loads(done.stdout)

    def apply(self, node, name, text):
        f = self.tmp / f"{name}.yaml"
        f.write_text(text)
        return self.ctl(node, "net", "apply", "-f", f, check=False)

    def nodes(self, via="n1"):
        return {n["name"]: n for n in self.json(via, "node", "list")["nodes"]}

    def net(self, name, via="n1"):
        return self.json(via, "net", "show", name)

    def vr_at(self, net, vr, via="n1"):
        shown = {v["name"]: v for v in self.net(net, via)["vrs"]}[vr]
        return shown["node"] if shown["state"] == "running" else None

    def kill_node(self, node, machine=False, vrs=()):
        """SIGKILL of `node`'s pearld (its VRs live on, as after any crash); with `machine`, the
        namespaces of `vrs` (and the hosts given) go too, as when the machine dies."""
        pid = self.pid(node)
        if pid:
            os.kill(pid, signal.SIGKILL)
        wait_until(f"pearld {node} gone", 10, lambda: self.pid(node) is None)
        if machine:
            for ns in vrs:
                remove_netns(ns)

    def watch_netns(self, *names):
        """Namespaces a test makes (VRs, hosts), removed at the end."""
        self.extra_netns.update(names)

    def close(self):
        for node in list(self.pearld):
            pid = self.pid(node)
            if pid:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                try:
                    self.ctl(node, "node", "stop", check=False)
                except subprocess.TimeoutExpired:
                    pass
            pid = self.pid(node)
            if pid:
                os.kill(pid, signal.SIGKILL)
        for p in list(self.pearld.values()) + list(self.etcd.values()):
            if p.poll() is None:
                p.kill()
            p.wait()
        for ns in list(self.extra_netns) + list(self.node_ns.values()):
            remove_netns(ns)
            sh("rm", "-rf", f"/etc/frr/{ns}", f"/var/run/frr/{ns}", check=False)
        for node in self.node_ns:
            remove_left_by(self.api(node))
        sh("ip", "link", "del", self.bridge, check=False)

#!/usr/bin/env bash
# PEARL's in-memory pipeline against DPDK's reference forwarder l3fwd, on the same trace, the same
# table and the same core, in the same run. Writes docs/benchmarks/l3fwd.json and l3fwd.md.
#
#   bench/l3fwd.sh [--runs N] [--seconds S] [--lpm] [--big] [--no-avx512]
#                  [--mbuf-size BYTES] [--table FILE] [--cpu C] [--work DIR]
#
#   --lpm     also l3fwd's LPM modes (loading the full IPv4 table into rte_lpm takes ~1 min a run,
#             into rte_fib ~2 s)
#   --big     also the 4,194,304-destination trace (l3fwd then needs ~6 GiB of memory)
#   --no-avx512  DPDK at its default SIMD width: without --force-max-simd-bitwidth=512 its FIB
#             lookups do not use AVX-512 (with it, IPv6 was ~25 % faster here, IPv4 no faster)
#   --mbuf-size  l3fwd's mbuf buffer size (default 512; l3fwd's own, 2176, halves its rate here:
#             see below)
#   PEARL_BENCH=PATH  the pearl-bench binary (default: build it, in $CARGO_TARGET_DIR or target/)
#
# l3fwd is built at run time from Debian's dpdk-doc copy (never committed here), patched for a
# full table (bigger LPM/FIB limits), for the pcap vdev (no rx checksum offload, an mbuf pool that
# can hold the whole trace) and without its per-route printf. It runs on one lcore with no NIC: a
# pcap vdev replays the trace forever (infinite_rx), a null vdev swallows what it forwards. It
# prints no rates, so they are read from DPDK telemetry (port 1's opackets, sampled twice).
# Runs alternate between the two forwarders so that both see the same background load.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 seconds=5 warmup=1 lpm=0 big=0 avx512=1 mbuf_size=512
table=../shared/data/bgp-full-table-2025.txt.gz cpu=1 work=/tmp/pearl-l3fwd
while (($#)); do
    case $1 in
        --runs) runs=${2:?--runs needs a value}; shift ;;
        --seconds) seconds=${2:?--seconds needs a value}; shift ;;
        --table) table=${2:?--table needs a value}; shift ;;
        --cpu) cpu=${2:?--cpu needs a value}; shift ;;
        --mbuf-size) mbuf_size=${2:?--mbuf-size needs a value}; shift ;;
        --work) work=${2:?--work needs a value}; shift ;;
        --lpm) lpm=1 ;;
        --big) big=1 ;;
        --no-avx512) avx512=0 ;;
        -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "l3fwd.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "l3fwd.sh: $*" >&2; exit 1; }
[[ $runs =~ ^[1-9][0-9]*$ && $seconds =~ ^[0-9]+([.][0-9]+)?$ && $cpu =~ ^[0-9]+$ && $mbuf_size =~ ^[0-9]+$ ]] ||
    die "--runs must be a positive integer, --seconds a number, --cpu a CPU number, --mbuf-size bytes"
((mbuf_size >= 256)) || die "--mbuf-size must leave room for the 128-byte headroom and a frame"
[[ -r $table ]] || die "cannot read the route table $table"
table=$(realpath "$table")

# --- prerequisites -----------------------------------------------------------------------------
examples=/usr/share/dpdk/examples
missing=()
[[ -d $examples/l3fwd && -d $examples/common ]] || missing+=(dpdk-doc)
pkg-config --exists libdpdk 2>/dev/null || missing+=(dpdk-dev)
compgen -G "/usr/lib/*/dpdk/pmds-*/librte_net_pcap.so*" >/dev/null &&
    compgen -G "/usr/lib/*/dpdk/pmds-*/librte_net_null.so*" >/dev/null || missing+=(dpdk)
if ((${#missing[@]})); then
    ((EUID == 0)) || die "needs the Debian packages ${missing[*]}: apt-get install ${missing[*]}"
    echo "l3fwd.sh: installing ${missing[*]}" >&2
    apt-get install -y -q "${missing[@]}" >&2 ||
        die "could not install ${missing[*]} (no network?): l3fwd's source comes from dpdk-doc, its libraries from dpdk-dev"
fi
for tool in cc make pkg-config python3 taskset; do
    command -v $tool >/dev/null || die "needs $tool"
done
((EUID == 0)) || die "DPDK's EAL wants root here (runtime dir under /var/run/dpdk)"
dpdk_version=$(pkg-config --modversion libdpdk)

if [[ -n ${PEARL_BENCH:-} ]]; then
    bench=$PEARL_BENCH
else
    cargo build --release -q -p pearl-bench
    bench=${CARGO_TARGET_DIR:-target}/release/pearl-bench
fi
[[ -x $bench ]] || die "no pearl-bench at $bench"

# --- the l3fwd process: started in the background, always stopped ------------------------------
prefix=pearl-l3fwd-$$
runtime=/var/run/dpdk/$prefix
l3fwd_pid=
stop_l3fwd() {
    [[ -n $l3fwd_pid ]] || return 0
    kill -INT "$l3fwd_pid" 2>/dev/null || true
    # It only notices SIGINT in its main loop, so one still loading its routes needs SIGKILL.
    for _ in $(seq 50); do kill -0 "$l3fwd_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$l3fwd_pid" 2>/dev/null || true
    wait "$l3fwd_pid" 2>/dev/null || true
    l3fwd_pid=
    rm -rf "$runtime"
}
trap stop_l3fwd EXIT
trap 'exit 130' INT TERM

# --- build l3fwd -------------------------------------------------------------------------------
mkdir -p "$work"
work=$(realpath "$work")
src=$work/src
rm -rf "$src"
mkdir -p "$src"
cp -r "$examples/l3fwd" "$examples/common" "$src/"
python3 - "$src/l3fwd" <<'PY' || die "patching l3fwd failed: DPDK's example changed (this script knows 22.11)"
import re, sys
d = sys.argv[1]
def patch(name, old, new, count=1):
    path = f"{d}/{name}"
    text = open(path).read()
    n = len(re.findall(old, text))
    if n != count:
        sys.exit(f"{name}: expected {count} match(es) of {old!r}, found {n}")
    open(path, "w").write(re.sub(old, new, text))
# The shipped limits (1024 LPM rules, 65,536 FIB routes, few tbl8 groups) fit the example's own
# routes, not 900k IPv4 / 160k IPv6.
patch("l3fwd_lpm.c", r"#define IPV4_L3FWD_LPM_MAX_RULES\s+1024", "#define IPV4_L3FWD_LPM_MAX_RULES (1 << 21)")
patch("l3fwd_lpm.c", r"#define IPV4_L3FWD_LPM_NUMBER_TBL8S \(1 << 8\)", "#define IPV4_L3FWD_LPM_NUMBER_TBL8S (1 << 12)")
patch("l3fwd_lpm.c", r"#define IPV6_L3FWD_LPM_MAX_RULES\s+1024", "#define IPV6_L3FWD_LPM_MAX_RULES (1 << 20)")
patch("l3fwd_lpm.c", r"#define IPV6_L3FWD_LPM_NUMBER_TBL8S \(1 << 16\)", "#define IPV6_L3FWD_LPM_NUMBER_TBL8S (1 << 19)")
patch("l3fwd_fib.c", r"config_ipv4\.max_routes = \(1 << 16\);", "config_ipv4.max_routes = (1 << 21);")
patch("l3fwd_fib.c", r"config\.max_routes = \(1 << 16\) - 1;", "config.max_routes = (1 << 20);")
patch("l3fwd_fib.c", r"config\.trie\.num_tbl8 = \(1 << 15\);", "config.trie.num_tbl8 = (1 << 19);")
# A line per route is a million lines of log.
patch("l3fwd_lpm.c", r'\bprintf\("LPM: Adding route', 'if (0) printf("LPM: Adding route', count=2)
patch("l3fwd_fib.c", r'\bprintf\("FIB: Adding route', 'if (0) printf("FIB: Adding route', count=2)
# The pcap vdev has no rx checksum offload, and ethdev refuses to configure one it lacks.
patch("main.c", r"\.offloads = RTE_ETH_RX_OFFLOAD_CHECKSUM,", ".offloads = 0,")
# infinite_rx keeps the whole trace in mbufs of the rx pool: the pool must hold it on top of its
# working set. The buffer size is an option because it decides the replay's cost: l3fwd's 2 KiB
# buffers put the stored frames 2.4 KB apart, and with them l3fwd forwarded about half as many
# packets as with 512-byte ones (both families, FIB); PEARL's in-memory port keeps its frames
# packed. A NIC's rx path has no stored trace at all. 4 M 2 KiB buffers would also need 10 GiB.
patch("main.c", r"\(unsigned\)8192\)",
      '(unsigned)(8192 + (getenv("L3FWD_TRACE_MBUFS") ? atoi(getenv("L3FWD_TRACE_MBUFS")) : 0)))')
patch("main.c", r"RTE_MBUF_DEFAULT_BUF_SIZE, socketid\);",
      '(getenv("L3FWD_MBUF_SIZE") ? atoi(getenv("L3FWD_MBUF_SIZE")) : RTE_MBUF_DEFAULT_BUF_SIZE), socketid);')
PY
# Same target level as PEARL's build (x86-64-v3); pkg-config's flags name an older one.
echo 'CFLAGS += -march=x86-64-v3' >>"$src/l3fwd/Makefile"
make -C "$src/l3fwd" -j2 >"$work/build.log" 2>&1 || { tail -20 "$work/build.log" >&2; die "building l3fwd failed (log: $work/build.log)"; }
l3fwd=$src/l3fwd/build/l3fwd

# --- routes and traces -------------------------------------------------------------------------
# Every route leads to port 1 (the null vdev). The family not measured gets a single route, so
# that it costs neither load time nor cache.
gzip -dcf "$table" | awk -v v4="$work/routes-v4.cfg" -v v6="$work/routes-v6.cfg" '
    { sub(/\r$/, "") } /^#/ || NF == 0 { next }
    /:/ { print "R" $1 " 1" > v6; next } { print "R" $1 " 1" > v4 }'
echo "R10.255.255.0/24 1" >"$work/one-v4.cfg"
echo "Rfd00:ffff::/32 1" >"$work/one-v6.cfg"
destinations=(65536)
((big)) && destinations+=(4194304)
for family in v4 v6; do
    for d in "${destinations[@]}"; do
        "$bench" pipeline --table "$table" --family $family --vrs 1 --destinations "$d" --write-pcap "$work/trace-$family-$d.pcap" ||
            die "pearl-bench could not write the $family trace"
    done
done

cat >"$work/telemetry.py" <<'PY'
"""Waits until l3fwd forwards, then samples port counters twice over the interval through DPDK's
telemetry socket; prints one JSON object: mpps (port 1 out), rx_mpps (port 0 in), cpu_share
(CPU time of l3fwd's threads over wall time: below ~0.95, others took the core)."""
import json, os, socket, sys, time
sock_path, pid, warmup, seconds, timeout = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:6])
def alive():
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
def fail(msg):
    print(json.dumps({"error": msg}))
    sys.exit(1)
deadline = time.time() + timeout
while True:
    if not alive() or time.time() > deadline:
        fail("l3fwd exited before its telemetry socket answered" if not alive() else "no telemetry socket")
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(sock_path)
        s.recv(4096)
        break
    except OSError:
        s.close()
        time.sleep(0.1)
def stats(port):
    s.send(f"/ethdev/stats,{port}".encode())
    return json.loads(s.recv(65536))["/ethdev/stats"]
def cpu_ticks():
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        f = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        total += int(f[11]) + int(f[12])
    return total / os.sysconf("SC_CLK_TCK")
while stats(1)["opackets"] == 0:
    if not alive() or time.time() > deadline:
        fail("l3fwd exited before forwarding" if not alive() else f"l3fwd forwarded nothing within {timeout:.0f} s")
    time.sleep(0.2)
time.sleep(warmup)
def sample():
    return time.monotonic(), cpu_ticks(), stats(0), stats(1)
t0, c0, in0, out0 = sample()
time.sleep(seconds)
t1, c1, in1, out1 = sample()
dt = t1 - t0
rx = in1["ipackets"] - in0["ipackets"]
tx = out1["opackets"] - out0["opackets"]
back = in1["opackets"] - in0["opackets"]
if tx <= 0 or rx <= 0:
    fail(f"no traffic during the interval (rx {rx}, tx {tx})")
if tx < 0.99 * rx:
    fail(f"l3fwd sent only {tx} of {rx} packets to port 1 ({back} back out of port 0: a route missing?)")
print(json.dumps({"mpps": round(tx / dt / 1e6, 3), "rx_mpps": round(rx / dt / 1e6, 3), "cpu_share": round((c1 - c0) / dt, 2)}))
PY

# --- measuring ---------------------------------------------------------------------------------
results=$work/results.jsonl
: >"$results"
rm -f "$work"/cmd-*
failed=0
shell_words() {
    local a words=()
    for a; do
        if [[ $a =~ ^[A-Za-z0-9_/.,=:+@%-]+$ ]]; then words+=("$a"); else words+=("'${a//\'/\'\\\'\'}'"); fi
    done
    echo "${words[*]}"
}
jget() { python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2]))' "$1" "$2" 2>/dev/null || echo "$1"; }
# One l3fwd measurement; sets out to {"mpps": ..} or to "" on failure. Not run in a subshell, so
# that the EXIT trap knows l3fwd's pid.
measure_l3fwd() { # mode family destinations
    local mode=$1 family=$2 d=$3 rules trace=$work/trace-$2-$3.pcap mem eal_extra=()
    if [[ $family == v4 ]]; then
        rules=(--rule_ipv4 "$work/routes-v4.cfg" --rule_ipv6 "$work/one-v6.cfg")
    else
        rules=(--rule_ipv4 "$work/one-v4.cfg" --rule_ipv6 "$work/routes-v6.cfg")
    fi
    # The tables take ~1.5 GiB (2 GiB were too few for FIB6's 2^19 tbl8 groups); the pool holds
    # the trace plus l3fwd's own ~9k mbufs, each with its 128-byte header and the pool's own.
    mem=$((2560 + (d + 16384) * (mbuf_size + 448) / 1048576))
    ((avx512)) && eal_extra+=(--force-max-simd-bitwidth=512)
    local cmd=(env L3FWD_TRACE_MBUFS="$d" L3FWD_MBUF_SIZE="$mbuf_size" taskset -c "$cpu" "$l3fwd" -l "$cpu" --no-huge -m "$mem"
        --no-pci --file-prefix "$prefix" --vdev "net_pcap0,rx_pcap=$trace,infinite_rx=1" --vdev net_null0,no-rx=1
        "${eal_extra[@]}" -- -p 0x3 --config "(0,0,$cpu)" --lookup "$mode" --parse-ptype "${rules[@]}")
    local log=$work/l3fwd-$mode-$family-$d.log
    shell_words "${cmd[@]}" >"$work/cmd-$mode-$family-$d"
    "${cmd[@]}" >"$log" 2>&1 &
    l3fwd_pid=$!
    if ! out=$(python3 "$work/telemetry.py" "$runtime/dpdk_telemetry.v2" "$l3fwd_pid" "$warmup" "$seconds" 900); then
        echo "l3fwd $mode $family $d: $(jget "$out" error)" >&2
        tail -5 "$log" >&2
        out=
    fi
    stop_l3fwd
}
record() { # peer mode family vrs destinations run json
    local j=$7
    if [[ -z $j ]]; then
        failed=1
        j='{"mpps": null}'
    fi
    python3 -c 'import json, sys
f = json.loads(sys.argv[7])
print(json.dumps({"peer": sys.argv[1], "mode": sys.argv[2], "family": sys.argv[3], "vrs": int(sys.argv[4]),
                  "destinations": int(sys.argv[5]), "run": int(sys.argv[6]), "mpps": f.get("mpps"),
                  "cpu_share": f.get("cpu_share")}))' "$1" "$2" "$3" "$4" "$5" "$6" "$j" >>"$results"
    echo "run $6: $1 $2 $3 $4 VR $5: $(if [[ -n $7 ]]; then echo "$(jget "$7" mpps) Mpps"; else echo failed; fi)" >&2
}
modes=(fib)
((lpm)) && modes+=(lpm)
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "l3fwd.sh: DPDK $dpdk_version, core $cpu, $runs runs of $seconds s; load $(load)" >&2
loads=$(load)
for run in $(seq "$runs"); do
    for family in v4 v6; do
        for d in "${destinations[@]}"; do
            for mode in "${modes[@]}"; do
                measure_l3fwd "$mode" "$family" "$d"
                record l3fwd "$mode" "$family" 1 "$d" "$run" "$out"
            done
            for vrs in 1 4; do
                out=$(taskset -c "$cpu" "$bench" pipeline --table "$table" --family $family --vrs $vrs \
                    --destinations "$d" --seconds "$seconds" --repeat 1) || out=
                record pearl pipeline "$family" "$vrs" "$d" "$run" "$out"
            done
        done
    done
    loads+="; $(load)"
done
((failed)) && die "some figures could not be measured (raw: $results); docs/benchmarks left as they were"

# --- report ------------------------------------------------------------------------------------
json=docs/benchmarks/l3fwd.json md=docs/benchmarks/l3fwd.md
mkdir -p docs/benchmarks
python3 - "$results" "$json" "$md" "$runs" "$seconds" "$cpu" "$dpdk_version" "$lpm" "$big" "$avx512" "$mbuf_size" "$loads" "$work" <<'PY'
import datetime, glob, json, statistics, sys
results, json_out, md_out, runs, seconds, cpu, dpdk, lpm, big, avx512, mbuf_size, loads, work = sys.argv[1:]
size = {"v4": 64, "v6": 78}
runs_of = {}
for line in open(results):
    r = json.loads(line)
    runs_of.setdefault((r["peer"], r["mode"], r["family"], r["vrs"], r["destinations"]), []).append(r)
figs = {}
for key, rs in runs_of.items():
    peer, mode, family, vrs, dest = key
    figs[key] = {
        "peer": peer, "mode": mode, "family": family, "vrs": vrs, "size": size[family], "destinations": dest,
        "mpps": round(statistics.median(r["mpps"] for r in rs), 3),
        # Packets per second of CPU time the forwarder actually got: corrects for time slices lost
        # to other processes on the core (not for the caches they pollute).
        "mpps_per_cpu": round(statistics.median(r["mpps"] / r["cpu_share"] for r in rs), 3),
        "runs": [r["mpps"] for r in rs], "cpu_share": [r["cpu_share"] for r in rs],
    }
get = lambda peer, mode, family, vrs, dest: figs.get((peer, mode, family, vrs, dest))
# ratio = PEARL / l3fwd: on a PEARL figure against l3fwd FIB (ratio_lpm: LPM); on an l3fwd figure,
# PEARL with 1 VR against it.
for f in figs.values():
    if f["peer"] == "pearl":
        for mode, name in (("fib", "ratio"), ("lpm", "ratio_lpm")):
            peer = get("l3fwd", mode, f["family"], 1, f["destinations"])
            if peer:
                f[name] = round(f["mpps"] / peer["mpps"], 2)
                f[name + "_per_cpu"] = round(f["mpps_per_cpu"] / peer["mpps_per_cpu"], 2)
    else:
        one = get("pearl", "pipeline", f["family"], 1, f["destinations"])
        f["ratio"] = round(one["mpps"] / f["mpps"], 2)
        f["ratio_per_cpu"] = round(one["mpps_per_cpu"] / f["mpps_per_cpu"], 2)
with open(json_out, "w") as fh:
    for f in figs.values():
        fh.write(json.dumps(f) + "\n")

flags = " ".join(x for x, on in (("--lpm", lpm), ("--big", big), ("--no-avx512", str(1 - int(avx512)))) if on == "1")
if mbuf_size != "512":
    flags = f"{flags} --mbuf-size {mbuf_size}".strip()
cmd = f"bench/l3fwd.sh --runs {runs} --seconds {seconds}" + (f" {flags}" if flags else "")
dests = sorted({f["destinations"] for f in figs.values()})
def shares(peer):
    s = [x for f in figs.values() if f["peer"] == peer for x in f["cpu_share"]]
    return f"{min(s):.2f}–{max(s):.2f}"
def sysfs(name):
    try:
        return open(f"/sys/kernel/mm/transparent_hugepage/{name}").read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return "unknown"
md = open(md_out, "w")
p = lambda *a: print(*a, file=md)
def table(value, spread):
    """One row per family and trace: PEARL with 1 and 4 VRs, l3fwd FIB (and LPM), the ratios."""
    cols = ["family", "frame", "distinct destinations", "PEARL 1 VR", "PEARL 4 VRs", "l3fwd FIB", "1 VR / FIB", "4 VRs / FIB"]
    if lpm == "1":
        cols += ["l3fwd LPM", "1 VR / LPM"]
    p("| " + " | ".join(cols) + " |")
    p("|" + "---|" * len(cols))
    for family in ("v4", "v6"):
        for dest in dests:
            one, four = get("pearl", "pipeline", family, 1, dest), get("pearl", "pipeline", family, 4, dest)
            peers = [get("l3fwd", m, family, 1, dest) for m in (["fib", "lpm"] if lpm == "1" else ["fib"])]
            cell = lambda f: f"{f[value]:.2f}" + (f" ({min(f['runs']):.2f}–{max(f['runs']):.2f})" if spread else "")
            row = [family, f"{size[family]} B", f"{dest:,}", cell(one), cell(four)]
            for i, peer in enumerate(peers):
                row += [cell(peer), f"{one[value] / peer[value]:.2f}"]
                if i == 0:
                    row += [f"{four[value] / peer[value]:.2f}"]
            p("| " + " | ".join(row) + " |")

p("# PEARL against DPDK l3fwd\n")
p(f"Generated by `{cmd}` on {datetime.date.today()}. Both forwarders take the same frames (`pearl-bench "
  "pipeline --write-pcap` writes the trace PEARL's 1-VR benchmark replays: destinations drawn like DPDK's, a "
  "prefix uniformly, then random host bits), the same table (the 2025 BGP table, all IPv4 or all IPv6 "
  f"routes, one next hop) and the same core ({cpu}), one at a time, runs of the two alternating. "
  "Raw figures: `l3fwd.json`.\n")
p(f"Mpps, medians of {runs} runs of {seconds} s (min–max in brackets):\n")
table("mpps", True)
p("\nThe same per second of CPU time each forwarder actually got (Mpps ÷ its share of the core over the "
  "measured interval), which takes out the time slices other processes took but not the caches they "
  "polluted:\n")
table("mpps_per_cpu", False)
p("\nWhat each side does per packet:\n")
p("- **PEARL** (`pearl-bench pipeline`, one worker): an in-memory port copies each frame into a fresh "
  "buffer, then extract → classify → FIB → adjacency → TTL −1 + MAC rewrite → per-VR queue → WDRR → tx. "
  "With 4 VRs each holds the full table and gets a quarter of the destinations.")
p(f"- **l3fwd** (DPDK {dpdk}, `--lookup fib|lpm --parse-ptype`, one lcore): the pcap vdev "
  "(`infinite_rx=1`) copies each frame of the trace, held in mbufs, into a fresh mbuf; software "
  "packet-type parsing, the lookup, RFC 1812 checks, TTL −1 and MAC rewrite, tx to a null vdev. Its rate "
  "is port 1's `opackets` from DPDK telemetry, sampled twice. One table, so one VR.")
p("- Page size differs: l3fwd runs with `--no-huge`, so its tables sit in 4 KiB pages (EAL backs that "
  f"memory with a memfd, and this machine's shmem THP mode is `{sysfs('shmem_enabled')}`); PEARL's FIB "
  f"arenas ask for transparent huge pages (THP mode `{sysfs('enabled')}`). Huge pages are worth ~4 ns per "
  "IPv4 lookup here. " + ("DPDK may use its AVX-512 lookups (`--force-max-simd-bitwidth=512`; without it, "
                        "as with `--no-avx512`, they are not used: IPv6 FIB was then ~20 % slower here, "
                        "IPv4 no slower)." if avx512 == "1"
                        else "DPDK runs at its default SIMD width (`--no-avx512`: no AVX-512 lookups)."))
p("- l3fwd is built from Debian's `dpdk-doc` copy with its table limits raised (LPM 2^21/2^20 rules, "
  "2^12 IPv4 and 2^19 IPv6 tbl8 groups; FIB 2^21/2^20 routes, 2^19 IPv6 tbl8 groups), rx checksum "
  "offload off (the pcap vdev has none), an mbuf pool large enough to hold the trace, its per-route "
  f"printf off, and `-march=x86-64-v3` like PEARL. Its mbufs hold {mbuf_size} bytes. l3fwd's own size, "
  "2176, puts the frames the pcap vdev replays 2.4 KB apart, and with it l3fwd forwarded about half as "
  "many packets on this machine (`--mbuf-size 2176`); PEARL's in-memory port keeps its frames packed, "
  "and a NIC's rx path replays nothing, so the smaller buffers are the fairer peer.")
p(f"\nNoise: the machine is shared (2 cores, other work running); load average (1, 5, 15 min) before "
  f"and after each round: {loads}. Share of the core each forwarder got over its measured intervals "
  f"(CPU time ÷ wall time, 1.0 = undisturbed): l3fwd {shares('l3fwd')}, PEARL {shares('pearl')}.\n")
p(f"Commands, as run (`{work}` is the work directory; the traces were written with `pearl-bench "
  "pipeline --table TABLE --family F --vrs 1 --destinations D --write-pcap FILE`):\n")
p("```")
for path in sorted(glob.glob(f"{work}/cmd-*")):
    p(open(path).read().strip())
p(f"taskset -c {cpu} pearl-bench pipeline --table TABLE --family v4|v6 --vrs 1|4 --destinations D --seconds {seconds} --repeat 1")
p("```")
md.close()
PY
cat "$md"

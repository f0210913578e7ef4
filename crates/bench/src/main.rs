//! `pearl-bench`: benchmarks of the fast-path building blocks. Each figure is printed as one JSON
//! object per line so scripts can collect them.

mod args;
mod chain;
mod classify;
mod e2e;
mod eval;
mod flood;
mod generator;
mod i3_overlay;
mod lpm;
mod netns;
mod pearld_process;
mod pipeline;
mod placement_sim;
mod report;
mod routed;
mod scale;
mod scale_forwarding;
mod scale_node;
mod scale_update;
mod scale_validate;
mod soak;
mod table;
mod xdp_routes;

use std::process::ExitCode;

const USAGE: &str = "usage:
  pearl-bench lpm --family v4|v6 --table FILE [--lookups N] [--repeat K] [--seed S]
                  [--order uniform|cyclic] [--update-batch B (0: no update figure)]
                  [--dump-addresses FILE]
  pearl-bench classify --rules N [--seed S] [--lookups N] [--repeat K]
  pearl-bench pipeline --table FILE [--vrs N] [--size BYTES] [--family v4|v6] [--workers W]
                       [--seconds S] [--destinations D] [--repeat K] [--seed S]
                       [--write-pcap FILE (write the trace's frames and exit)]
                       [--plugin FILE.wasm|FILE.wat|FILE.o|EXECUTABLE] [--code ip|filter|i3]
                       [--rules N (filter)] [--triggers N (i3)]
  pearl-bench chain --table FILE [--vrs N] [--size BYTES] [--seconds S] [--destinations D] [--repeat K]
                    (N fast VRs in a row on wires, in memory; IPv4)
  pearl-bench e2e [--family v4|v6] [--sizes 64,512,1518 (v6: 78,512,1518)] [--vrs 1,2,3,4]
                  [--seconds S] [--repeat K] [--warmup S] [--driver af_xdp|af_packet] [--rx af_xdp|af_packet]
                  [--kinds fast,kernel,shared,wasm-lpm,wasm-wire,process-lpm,process-wire,xdp-lpm,xdp-wire] [--pearld PATH] [--plugins DIR] [--gen-cpu C] [--router-cpu C]
                  [--rate-pps R (offered over all VRs; default: as fast as the generator goes)]
                  (root; veth + namespaces)
  pearl-bench eval [--quick] [--only throughput] [--out docs/evaluation] [--markdown docs/EVALUATION.md]
                   [--sizes 64,128,256,512,1024,1280,1518 (--quick: 64,512,1518)] [--max-pps 1000000]
                   [--pearld PATH] [--gen-cpu C] [--router-cpu C]
                   (root; NDR/PDR by MLRsearch through pearld, the kernel router and the rig alone;
                   JSON, PNGs and the markdown page, every output checked)
  pearl-bench routed --table FILE [--latency-runs N] [--repeat K] [--gateways G]   (root)
  pearl-bench scale [--vrs 256,1024,4096] [--kind fast|kernel|shared] [--idle-seconds 60]
                    [--settle-seconds 20] [--creates 9] [--seconds S] [--repeat K] [--pearld PATH]
                    [--parts node,forwarding,update,validate] [--changes 21]
                    [--out docs/benchmarks/scale]   (root; veth + namespaces)
  pearl-bench flood --netns NS --interface IF --pcap FILE [--seconds S] [--cpu C]
                    (root; sends the file's frames round-robin as fast as the link takes them)
  pearl-bench soak [--minutes 60] [--json FILE] [--record]
                    (root; runs bench/soak.py: traffic, BGP flaps, VR churn and captures at once)
  pearl-bench placement-sim [--vns 1000] [--variances 10,25,50,75,100] [--software-mbps 100]
                    [--hardware-mbps 1000] [--slots 20] [--arrival-hours 2] [--lifetime-hours 64]
                    [--median-mbps 20] [--sigma 1.0] [--seed S]
                    (the FPGA substrate's allocation experiment through PEARL's allocator)";

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = match argv.first().map(String::as_str) {
        Some("lpm") => lpm::run(&argv[1..]),
        Some("classify") => classify::run(&argv[1..]),
        Some("pipeline") => pipeline::run(&argv[1..]),
        Some("chain") => chain::run(&argv[1..]),
        Some("e2e") => e2e::run(&argv[1..]),
        Some("eval") => eval::run(&argv[1..]),
        Some("routed") => routed::run(&argv[1..]),
        Some("scale") => scale::run(&argv[1..]),
        Some("flood") => flood::run(&argv[1..]),
        Some("soak") => soak::run(&argv[1..]),
        Some("placement-sim") => placement_sim::run(&argv[1..]),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(format!("unknown benchmark {other:?}\n{USAGE}")),
        None => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pearl-bench: {e}");
            ExitCode::from(2)
        }
    }
}

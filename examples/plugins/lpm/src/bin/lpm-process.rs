//! The LPM router as a process plugin (`plugin: {process: [.../lpm-process]}`).

fn main() {
    std::process::exit(pearl_plugin_sdk::process::serve(pearl_plugin_lpm::process));
}

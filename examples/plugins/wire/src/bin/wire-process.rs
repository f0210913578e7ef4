//! The wire as a process plugin (`plugin: {process: [.../wire-process]}`).

fn main() {
    std::process::exit(pearl_plugin_sdk::process::serve(pearl_plugin_wire::process));
}

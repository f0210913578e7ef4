//! A plugin VR's `limits.memory_mb` covers its program and its tables: what the tables may take
//! (their most entries × the longest key and value) is charged first, the program gets the rest,
//! and a VR whose tables alone could take it all is refused, naming the limit.

use pearl_control::parse_config_in;
use pearl_program::hosted;

/// A plugin whose `pearl_init` grows its memory by 16 MiB (a growth beyond its limit traps).
const GROWER: &str = r#"(module
  (memory (export "memory") 2)
  (func (export "pearl_area") (result i32) (i32.const 65536))
  (func (export "pearl_area_size") (result i32) (i32.const 65536))
  (func (export "pearl_process") (param i32))
  (func (export "pearl_init") (param i32 i32) (result i32)
    (i32.eq (memory.grow (i32.const 256)) (i32.const -1))))"#;

fn prepare(tables: &str) -> Result<pearl_plugin::Prepared, String> {
    let dir = std::env::temp_dir().join(format!("pearl-plugin-tables-memory-{}-{}", std::process::id(), tables.len()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("p.wat"), GROWER).unwrap();
    let yaml = format!(
        "ports:\n  - {{name: p0, interface: p0, driver: af_packet}}\nvrs:\n  - name: lab\n    kind: plugin\n    \
         plugin: {{wasm: p.wat, tables: {{{tables}}}}}\n    limits: {{memory_mb: 64}}\n    interfaces:\n      \
         - {{name: eth0, port: p0, mac: \"02:00:00:00:07:00\"}}\n"
    );
    let config = parse_config_in(&yaml, &dir).unwrap();
    let done = pearl_plugin::program_for(&config.vrs[0], hosted(&config.vrs[0]).unwrap(), "vrs[0]", None).map_err(|e| e.to_string());
    std::fs::remove_dir_all(&dir).unwrap();
    done
}

#[test]
fn tables_are_charged_to_the_vrs_memory_before_its_program() {
    // 1,000 entries may take ~1 MiB: the program still grows to 16 MiB of its 64.
    let small = prepare("seen: 1000").expect("small tables leave the program its memory");
    assert!(small.tables.bound_bytes() == 1000 * (64 + 1024), "{}", small.tables.bound_bytes());
    // 50,000 entries may take ~52 MiB: 12 MiB are left, and the program cannot grow by 16.
    let crowded = prepare("seen: 50000").err().expect("the program's memory is what the tables leave");
    assert!(crowded.starts_with("vrs[0].plugin.wasm") && crowded.contains("growth operation limited"), "{crowded}");
    // 100,000 entries may take ~104 MiB: more than the VR has.
    let refused = prepare("seen: 100000").err().expect("tables beyond the limit are refused");
    assert!(refused.starts_with("vrs[0].limits.memory_mb") && refused.contains("103.8 MiB"), "{refused}");
}

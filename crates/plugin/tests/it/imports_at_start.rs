//! A plugin may call pearld while it starts (`pearl_init`, its start function): the imports
//! answer or trap, and never bring pearld down. Written as WebAssembly text so that each case
//! is exactly the calls it names.

use pearl_control::parse_config_in;
use pearl_program::hosted;

/// A plugin whose `pearl_init` calls `route_v6` and then answers whether `table_find("stats")`
/// found a table; `start` adds a start function that calls `route_v6` before its memory is known.
fn plugin(start: bool) -> String {
    let start = if start { "(start $early)" } else { "" };
    format!(
        r#"(module
  (import "pearl" "route_v6" (func $route_v6 (param i32 i32) (result i32)))
  (import "pearl" "table_find" (func $table_find (param i32 i32) (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "stats")
  (func $early (drop (call $route_v6 (i32.const 32) (i32.const 64))))
  {start}
  (func (export "pearl_area") (result i32) (i32.const 65536))
  (func (export "pearl_area_size") (result i32) (i32.const 65536))
  (func (export "pearl_process") (param i32))
  (func (export "pearl_init") (param i32 i32) (result i32)
    (drop (call $route_v6 (i32.const 32) (i32.const 64)))
    (i32.ne (call $table_find (i32.const 16) (i32.const 5)) (i32.const 0))))"#
    )
}

fn prepare(wat: &str, tables: &str) -> Result<pearl_plugin::Prepared, String> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("pearl-plugin-imports-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("p.wat"), wat).unwrap();
    let yaml = format!(
        "ports:\n  - {{name: p0, interface: p0, driver: af_packet}}\nvrs:\n  - name: lab\n    kind: plugin\n    \
         plugin: {{wasm: p.wat{tables}}}\n    interfaces:\n      - {{name: eth0, port: p0, mac: \"02:00:00:00:07:00\"}}\n"
    );
    let config = parse_config_in(&yaml, &dir).unwrap();
    let done = pearl_plugin::program_for(&config.vrs[0], hosted(&config.vrs[0]).unwrap(), "vrs[0]", None).map_err(|e| e.to_string());
    std::fs::remove_dir_all(&dir).unwrap();
    done
}

#[test]
fn init_may_look_up_routes_and_find_its_tables() {
    let prepared = prepare(&plugin(false), ", tables: {stats: 1}").unwrap();
    assert_eq!(prepared.tables.summary(), vec![("stats".to_string(), 1, 0)]);
    let refused = prepare(&plugin(false), "").err().unwrap();
    assert!(refused.contains("pearl_init refused"), "without the table its init says no: {refused}");
}

#[test]
fn a_start_function_calling_pearld_is_refused_not_fatal() {
    let refused = prepare(&plugin(true), ", tables: {stats: 1}").err().unwrap();
    assert!(refused.starts_with("vrs[0].plugin.wasm") && refused.contains("before its memory"), "{refused}");
}

use pearl_classifier::*;
fn main() {
    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let rules = synth::rules(n, 1);
    let mut c = Classifier::new();
    for r in &rules { c.insert(*r).unwrap(); }
    c.tmp_tables();
    let keys = synth::keys(&rules, 100000, 2);
    let (mut p, mut h, mut ch) = (0, 0, 0);
    for k in &keys { let (a, b, d) = c.tmp_stats(k); p += a; h += b; ch += d; }
    let m = keys.len() as f64;
    eprintln!("probes {:.2} bucket hits {:.2} checked {:.2}", p as f64 / m, h as f64 / m, ch as f64 / m);
}

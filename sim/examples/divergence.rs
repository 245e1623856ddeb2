//! Diagnoses in-process nondeterminism: runs a scenario several times in one process and
//! prints a digest of each timeline. Usage: divergence SCENARIO [OTHER_SCENARIO_FIRST]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let r = baton_model::scenario::load(std::path::Path::new(&args[1]), &[]).unwrap();
    if let Some(other) = args.get(2) {
        let o = baton_model::scenario::load(std::path::Path::new(other), &[]).unwrap();
        let _ = baton_sim::run(&o, 42).unwrap();
        println!("ran {other} first");
    }
    for _ in 0..3 {
        let a = baton_sim::run(&r, 42).unwrap();
        let h = a
            .timeline_jsonl()
            .bytes()
            .fold(0xcbf29ce484222325u64, |h, b| {
                (h ^ b as u64).wrapping_mul(0x100000001b3)
            });
        println!("{h:016x}");
    }
}

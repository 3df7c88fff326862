//! `hrr-pack`: not implemented yet; it says so and exits 2 rather than pretending to work.
fn main() {
    eprintln!("hrr-pack: not implemented yet (pack/unpack/list/verify/scan/scrub are planned)");
    std::process::exit(2);
}

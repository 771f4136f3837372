#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bay_fuzz_bodies::evidence(data));

#![no_main]
// See hcomm_core::fuzz::bootstrap_table for the input format and the properties checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| hcomm_core::fuzz::bootstrap_table(data));

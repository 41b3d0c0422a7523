#![no_main]
// See hcomm_core::fuzz::param_value for the input format and the properties checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| hcomm_core::fuzz::param_value(data));

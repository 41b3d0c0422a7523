#![no_main]
// See hcomm_core::fuzz::socket_ifname for the input format and the properties checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| hcomm_core::fuzz::socket_ifname(data));

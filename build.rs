//! Gives libhcomm.so a SONAME: rustc sets none for a cdylib, and programs
//! linked with `-lhcomm` must record a stable name to load at run time.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhcomm.so");
    println!("cargo:rerun-if-changed=build.rs");
}

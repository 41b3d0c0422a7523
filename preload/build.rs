//! Gives libhcomm_preload.so a SONAME (rustc sets none for a cdylib).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhcomm_preload.so");
    println!("cargo:rerun-if-changed=build.rs");
}

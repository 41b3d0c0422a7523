#!/usr/bin/env bash
# The README's "run" command: build hcomm, build the example against hcomm's own mpi.h, and run
# it on 4 ranks with hcomm's launcher. Needs only the Rust toolchain and a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
mkdir -p build
cc -O2 -Wall -I include examples/allreduce_demo.c -L target/release -lhcomm \
    -Wl,-rpath,"$PWD/target/release" -o build/allreduce_demo
exec target/release/hcomm run -n "${NP:-4}" build/allreduce_demo

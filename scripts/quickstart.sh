#!/usr/bin/env bash
# The README's "run" command: build hcomm, build the data-parallel training example
# (examples/train_mlp.c) against hcomm's own mpi.h, and train it on 4 ranks with hcomm's
# launcher. Needs only the Rust toolchain and a C compiler. NP=N changes the rank count;
# arguments are passed to the example (e.g. --per-tensor, --hidden 1024).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
mkdir -p build
cc -O2 -Wall -I include examples/train_mlp.c -L target/release -lhcomm \
    -Wl,-rpath,"$PWD/target/release" -lm -o build/train_mlp
exec target/release/hcomm run -n "${NP:-4}" build/train_mlp "$@"

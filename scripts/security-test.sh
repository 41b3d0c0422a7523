#!/usr/bin/env bash
# scripts/security-test.sh - the job secret and hostile connections (docs/ARCHITECTURE.md,
# "Security"). Each case is bounded in time and checks exit statuses and error texts.
#
#   1. Two ranks started by hand through HCOMM_URI with different secrets (HCOMM_SECRET): both
#      exit non-zero within a few seconds, rank 1 saying the secrets differ, rank 0 naming the
#      missing rank and the failed secret check.
#   2. HCOMM_SECRET_FILE readable by others (mode 0644): a clear error naming the mode; the same
#      file at mode 0600 on both ranks: the job runs.
#   3. Garbage and random connections thrown at every listening TCP port of a running
#      `hcomm run -n 3` job (HCOMM_TRANSPORT=tcp, so the transport listens too) while it loops
#      over checked allreduces: the job exits 0 with every result right, the intruders are
#      logged at INFO, and /dev/shm holds nothing of the job afterwards.
#
# Usage: scripts/security-test.sh   (env BUILD=dir holding libhcomm.so and hcomm; default
#        target/release)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-$ROOT/target/release}
WORK=$(mktemp -d /tmp/hcomm-sec-test.XXXXXX)
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

cat >"$WORK/loop.c" <<'EOF'
/* Checked allreduces of varying size for SEC_SECONDS (rank 0's clock decides, by bcast).
 * Rank 2 sleeps SEC_DELAY_MS before MPI_Init, which keeps rank 0's rendezvous port and rank
 * 1's transport port listening meanwhile. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *r = getenv("HCOMM_RANK"), *d = getenv("SEC_DELAY_MS"), *s = getenv("SEC_SECONDS");
    if (r && d && atoi(r) == 2) usleep(1000 * atoi(d));
    MPI_Init(&argc, &argv);
    int rank, size, iters = 0, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double secs = s ? atof(s) : 0, t0 = MPI_Wtime();
    int *buf = malloc(70000 * sizeof(int));
    for (;;) {
        int go = rank == 0 ? MPI_Wtime() - t0 < secs || iters == 0 : 0;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!go) break;
        int n = 1 + (iters * 7919) % 70000;
        for (int i = 0; i < n; i++) buf[i] = (rank + 1) * (i + iters);
        MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < n; i++)
            if (buf[i] != size * (size + 1) / 2 * (i + iters)) { bad++; break; }
        iters++;
    }
    if (bad) printf("FAIL: rank %d: %d of %d allreduces wrong\n", rank, bad, iters);
    else printf("rank %d: %d allreduces checked\n", rank, iters);
    free(buf);
    MPI_Finalize();
    return bad != 0;
}
EOF
cc -O1 -I include "$WORK/loop.c" -o "$WORK/loop" -L "$BUILD" -lhcomm -Wl,-rpath,"$BUILD"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME RANK VAR=value... : one rank by hand, in the background.
start() {
    local name=$1 r=$2
    shift 2
    env HCOMM_RANK="$r" HCOMM_SIZE=2 "$@" timeout -k 2 20 "$WORK/loop" \
        >"$WORK/$name.$r.out" 2>"$WORK/$name.$r.err" </dev/null &
    PIDS+=($!)
}
wait_all() {
    RCS=()
    local p rc
    for p in "${PIDS[@]}"; do rc=0; wait "$p" || rc=$?; RCS+=("$rc"); done
    PIDS=()
}

# 1. Different secrets.
port=$(free_port)
t0=$SECONDS
start s1 0 HCOMM_URI="tcp://127.0.0.1:$port" HCOMM_BOOTSTRAP_TIMEOUT=3 HCOMM_SECRET=secret-of-rank-zero-0123
start s1 1 HCOMM_URI="tcp://127.0.0.1:$port" HCOMM_BOOTSTRAP_TIMEOUT=3 HCOMM_SECRET=secret-of-rank-one-45678
wait_all
took=$((SECONDS - t0))
if [ "${RCS[0]}" = 0 ] || [ "${RCS[1]}" = 0 ] || [ "${RCS[0]}" = 124 ] || [ "${RCS[1]}" = 124 ]; then
    fail "different secrets: exit statuses ${RCS[*]} (want non-zero, no timeout)"
elif ! grep -q "secrets differ" "$WORK/s1.1.err" || ! grep -q "tcp://127.0.0.1:$port" "$WORK/s1.1.err"; then
    fail "different secrets: rank 1 did not say the secrets differ: $(head -c 400 "$WORK/s1.1.err")"
elif ! grep -q "ranks 1 never arrived.*secrets differ" "$WORK/s1.0.err"; then
    fail "different secrets: rank 0 did not name rank 1 and the secret check: $(head -c 400 "$WORK/s1.0.err")"
elif [ "$took" -gt 10 ]; then
    fail "different secrets: took ${took}s"
elif grep -q "secret-of-rank" "$WORK"/s1.*.err; then
    fail "different secrets: a secret was printed"
else
    pass "different secrets: both ranks fail in ${took}s: $(grep -o 'rank 0 at.*secrets differ' "$WORK/s1.1.err" | head -1)"
fi

# 2. HCOMM_SECRET_FILE permissions.
printf 'a-shared-secret-for-this-test\n' >"$WORK/secret"
chmod 644 "$WORK/secret"
port=$(free_port)
start s2 0 HCOMM_URI="tcp://127.0.0.1:$port" HCOMM_BOOTSTRAP_TIMEOUT=3 HCOMM_SECRET_FILE="$WORK/secret"
start s2 1 HCOMM_URI="tcp://127.0.0.1:$port" HCOMM_BOOTSTRAP_TIMEOUT=3 HCOMM_SECRET_FILE="$WORK/secret"
wait_all
if [ "${RCS[0]}" = 0 ] || ! grep -q "mode 0644.*0600" "$WORK/s2.0.err"; then
    fail "secret file mode 0644: exit ${RCS[*]}: $(head -c 400 "$WORK/s2.0.err")"
else
    pass "secret file mode 0644 is refused: $(grep -o 'HCOMM_SECRET_FILE=[^ ]* has mode 0644' "$WORK/s2.0.err" | head -1)"
fi
chmod 600 "$WORK/secret"
port=$(free_port)
start s3 0 HCOMM_URI="tcp://127.0.0.1:$port" HCOMM_SECRET_FILE="$WORK/secret" HCOMM_TRANSPORT=tcp
start s3 1 HCOMM_URI="tcp://127.0.0.1:$port" HCOMM_SECRET_FILE="$WORK/secret" HCOMM_TRANSPORT=tcp
wait_all
if [ "${RCS[*]}" != "0 0" ] || grep -q '^FAIL' "$WORK"/s3.*.out; then
    fail "secret file mode 0600: exit ${RCS[*]}: $(cat "$WORK"/s3.*.err | head -c 400)"
else
    pass "secret file mode 0600, TCP transport: $(cat "$WORK/s3.0.out")"
fi

# 3. Intruders at every listening port of a running job.
cat >"$WORK/intruder.py" <<'EOF'
# Finds the TCP ports the job's processes (the launcher and its descendants) listen on and
# throws garbage and random connections at them until the launcher exits.
import os, random, socket, struct, sys, time

launcher = int(sys.argv[1])
rng = random.Random(7)

def job_pids():
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [launcher]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out

def listening_ports(pids):
    inodes = set()
    for p in pids:
        try:
            for fd in os.listdir(f"/proc/{p}/fd"):
                link = os.readlink(f"/proc/{p}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            pass
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for l in lines:
            f = l.split()
            if f[3] == "0A" and f[9] in inodes:
                ports.add(int(f[1].rsplit(":", 1)[1], 16))
    return ports

def attack(port, silent):
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", port))
        kind = rng.randrange(6)
        if kind == 0:
            s.sendall(os.urandom(rng.randrange(1, 3000)))
        elif kind == 1:
            s.sendall(struct.pack("<I", 0xFFFFFFF0) + os.urandom(16))
        elif kind == 2:  # an offer cut short
            s.sendall(struct.pack("<I", 80) + b"hcA1" + os.urandom(20))
        elif kind == 3:  # a whole offer with a random hello, then a made-up proof
            m = b"hcA1" + os.urandom(32) + os.urandom(rng.randrange(0, 64))
            s.sendall(struct.pack("<I", len(m)) + m)
            try:
                s.recv(4096)
            except OSError:
                pass
            p = b"hcA3" + os.urandom(32)
            s.sendall(struct.pack("<I", len(p)) + p)
        elif kind == 4:
            silent.append(s)  # connected, says nothing, stays open
            return
        # kind 5: connect and close at once
    except OSError:
        pass
    s.close()

hits, silent, seen = 0, [], set()
while True:
    try:
        os.kill(launcher, 0)
    except OSError:
        break
    for port in listening_ports(job_pids()):
        seen.add(port)
        for _ in range(3):
            attack(port, silent)
            hits += 1
    if len(silent) > 40:
        for s in silent[:20]:
            s.close()
        del silent[:20]
    time.sleep(0.005)
print(f"intruder: {hits} hostile connections to {len(seen)} listening port(s): {sorted(seen)}")
EOF
if ! command -v python3 >/dev/null; then
    echo "SKIP: intruders: no python3"
else
    HCOMM_TRANSPORT=tcp HCOMM_DEBUG=INFO SEC_DELAY_MS=2500 SEC_SECONDS=3 \
        timeout -k 2 40 "$BUILD/hcomm" run -n 3 "$WORK/loop" >"$WORK/job.out" 2>"$WORK/job.err" &
    job=$!
    PIDS+=("$job")
    python3 "$WORK/intruder.py" "$job" >"$WORK/intruder.out" 2>&1 &
    PIDS+=($!)
    wait_all
    jobrc=${RCS[0]}
    nports=$(grep -o 'to [0-9]* listening' "$WORK/intruder.out" | grep -o '[0-9]*' || echo 0)
    ndropped=$(grep -c 'dropped a connection' "$WORK/job.err" || true)
    left=$(find /dev/shm -maxdepth 1 -name 'hcomm-*' -newer "$WORK/loop" 2>/dev/null | wc -l)
    if [ "$jobrc" != 0 ] || grep -q '^FAIL' "$WORK/job.out" || [ "$(grep -c 'allreduces checked' "$WORK/job.out")" != 3 ]; then
        fail "intruders: job exit $jobrc: $(grep -h -m3 -iE 'FAIL|error|fatal' "$WORK/job.out" "$WORK/job.err" | head -3)"
    elif [ "${nports:-0}" -lt 2 ]; then
        fail "intruders: reached only ${nports:-0} listening port(s) (want the rendezvous and a transport listener): $(cat "$WORK/intruder.out")"
    elif [ "$ndropped" -lt 1 ]; then
        fail "intruders: no 'dropped a connection' line at INFO"
    elif [ "$left" != 0 ]; then
        fail "intruders: $left /dev/shm/hcomm-* segment(s) left behind"
    else
        pass "intruders: $(cat "$WORK/intruder.out"); $ndropped dropped at INFO; $(grep -h 'allreduces checked' "$WORK/job.out" | head -1)"
    fi
fi

if [ "$FAILS" -gt 0 ]; then
    echo "security-test: $FAILS failure(s)"
    exit 1
fi
echo "security-test: all passed"

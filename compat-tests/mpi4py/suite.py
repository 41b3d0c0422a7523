"""Runs (part of) mpi4py's own test suite and records, per rank, which tests did not pass.

    mpiexec -n N python suite.py TESTDIR OUTDIR [main.py options and test names...]

TESTDIR is the sdist's test/ directory (scripts/mpi4py-env.sh unpacks it into
build/mpi4py/test); the remaining arguments go to its main.py (e.g. `-q test_cco_buf`). Each
rank R writes OUTDIR/rank<R>.results: a line "ran N" then one line per test that did not pass,
"<test id> FAIL|ERROR|UNEXPECTED_SUCCESS", and OUTDIR/rank<R>.tracebacks with the tracebacks.
compat-tests/mpi4py.sh compares the union over ranks with a checked-in baseline. The exit
status is main.py's (1 when a test failed on this rank).
"""

import os
import sys
import unittest


def main():
    testdir, outdir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    args = sys.argv[3:]
    sys.path.insert(0, testdir)
    sys.dont_write_bytecode = True
    import main as mpi4py_main  # the suite's own runner (mpi4py's test/main.py)

    class RecordingRunner(unittest.TextTestRunner):
        def run(self, test):
            result = super().run(test)
            from mpi4py import MPI

            rank = MPI.COMM_WORLD.Get_rank()
            os.makedirs(outdir, exist_ok=True)
            with open(os.path.join(outdir, f"rank{rank}.results"), "w") as res, \
                    open(os.path.join(outdir, f"rank{rank}.tracebacks"), "w") as tbs:
                res.write(f"ran {result.testsRun}\n")
                for kind, items in (("FAIL", result.failures), ("ERROR", result.errors)):
                    for case, tb in items:
                        res.write(f"{case.id()} {kind}\n")
                        tbs.write(f"=== rank {rank}: {case.id()} {kind}\n{tb}\n")
                for case in result.unexpectedSuccesses:
                    res.write(f"{case.id()} UNEXPECTED_SUCCESS\n")
            return result

    sys.argv = [os.path.join(testdir, "main.py"), *args]
    mpi4py_main.main(module=None, testRunner=RecordingRunner)


if __name__ == "__main__":
    main()

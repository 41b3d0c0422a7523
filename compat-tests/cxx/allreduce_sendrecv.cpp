// C++ against include/mpi.h: the header is C++-safe (extern "C"), and a C++ program links
// with -lhcomm and runs (scripts/test.sh builds it with g++ and runs it on 3 ranks).
#include <mpi.h>
#include <cstdio>
#include <vector>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<double> v(10, r), w(10);
  MPI_Allreduce(v.data(), w.data(), 10, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int tok = r;
  MPI_Sendrecv_replace(&tok, 1, MPI_INT, (r+1)%n, 0, (r+n-1)%n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (w[3] != n*(n-1)/2.0 || tok != (r+n-1)%n) { std::printf("FAIL cxx\n"); return 1; }
  if (r == 0) std::printf("cxx ok\n");
  MPI_Finalize();
}

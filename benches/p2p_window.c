/* p2p_window.c - windows of nonblocking point-to-point messages between 2 ranks, the pattern
 * of OSU's osu_bibw and of halo exchanges: each rank posts 64 MPI_Irecv and 64 MPI_Isend to
 * the other, then one MPI_Waitall; best of 3 timings of `iters` windows, per size (8 B,
 * 1 KiB, 64 KiB, 1 MiB). Prints microseconds per window and the bidirectional rate.
 *
 *   cc -O2 -I include benches/p2p_window.c -L target/release -lhcomm -o p2p_window
 *   target/release/hcomm run -n 2 ./p2p_window [nsizes] [iters for sizes < 64 KiB]
 *   mpicc.mpich -O2 benches/p2p_window.c -o p2p_window.mpich && mpiexec.mpich -n 2 ./p2p_window.mpich
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define W 64
int main(int argc,char**argv){
  MPI_Init(&argc,&argv);
  int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
  int peer=1-r;
  size_t sizes[]={8,1024,65536,1<<20}; int ns=argc>1?atoi(argv[1]):4;
  char *sb=malloc(W*(1<<20)), *rb=malloc(W*(1<<20));
  memset(sb,1,W*(1<<20)); memset(rb,0,W*(1<<20));
  MPI_Request rq[2*W];
  for(int si=0;si<ns;si++){
    size_t n=sizes[si]; int iters = n>=65536? 20: (argc>2?atoi(argv[2]):2000);
    double best=1e9;
    for(int rep=0;rep<3;rep++){
      MPI_Barrier(MPI_COMM_WORLD);
      double t=MPI_Wtime();
      for(int it=0;it<iters;it++){
        for(int j=0;j<W;j++) MPI_Irecv(rb+j*n,n,MPI_CHAR,peer,10,MPI_COMM_WORLD,&rq[j]);
        for(int j=0;j<W;j++) MPI_Isend(sb+j*n,n,MPI_CHAR,peer,10,MPI_COMM_WORLD,&rq[W+j]);
        MPI_Waitall(2*W,rq,MPI_STATUSES_IGNORE);
      }
      t=(MPI_Wtime()-t)/iters;
      if(t<best)best=t;
    }
    if(r==0) printf("%8zu bytes: %9.2f us/window  %9.1f MB/s bi\n", n, best*1e6, 2.0*W*n/best/1e6);
  }
  MPI_Finalize();
}

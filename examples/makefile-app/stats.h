/* Global statistics of one value per rank, computed with collectives. */
#ifndef STATS_H
#define STATS_H
#include <mpi.h>

struct stats {
    double sum, min, max, rms;
};

int global_stats(double value, MPI_Comm comm, struct stats *out);

#endif

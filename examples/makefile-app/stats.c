#include "stats.h"

#include <math.h>

int global_stats(double value, MPI_Comm comm, struct stats *out)
{
    int size, rc;
    MPI_Comm_size(comm, &size);
    double sq = value * value, sumsq = 0;
    if ((rc = MPI_Allreduce(&value, &out->sum, 1, MPI_DOUBLE, MPI_SUM, comm)) != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_Allreduce(&value, &out->min, 1, MPI_DOUBLE, MPI_MIN, comm)) != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_Allreduce(&value, &out->max, 1, MPI_DOUBLE, MPI_MAX, comm)) != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_Allreduce(&sq, &sumsq, 1, MPI_DOUBLE, MPI_SUM, comm)) != MPI_SUCCESS)
        return rc;
    out->rms = sqrt(sumsq / size);
    return MPI_SUCCESS;
}

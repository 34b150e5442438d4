/* Launch/placement probe: every rank reports world size, host and how many
 * ranks MPI considers on its shared-memory node; rank 0 reports the library. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, node_ranks, len, i;
    char host[256], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Comm node;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_ranks);
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    if (rank == 0) {
        MPI_Get_library_version(lib, &len);
        for (i = 0; i < len && lib[i]; i++)
            if (lib[i] == '\n') lib[i] = '|';
        while (i > 0 && (lib[i - 1] == '|' || lib[i - 1] == ' ')) lib[--i] = '\0';
        /* At most 200 characters: MPICH's full string (~2 KB, configure line)
         * is forwarded by srun in chunks, and other ranks' lines then land in
         * the middle of it. The version is on the first line. */
        printf("MPIMATRIX library=%.200s\n", lib);
    }
    printf("MPIMATRIX rank=%d size=%d host=%s node_ranks=%d\n", rank, size, host, node_ranks);
    fflush(stdout);
    MPI_Comm_free(&node);
    /* MPICH 4.0 over UCX-TCP can hang in MPI_Finalize when ranks arrive at
     * different times; a barrier first avoids it. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

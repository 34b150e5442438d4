/* Two-rank ping-pong for the intranode/internode latency comparison.
 *
 * usage: mpi_pingpong LABEL
 * Rank 0 prints one line:
 *   MPIMATRIX pingpong label=L hosts=H0,H1 lat_bytes=8 lat_best_us=.. lat_median_us=..
 *       lat_batches=.. bw_bytes=1048576 bw_best_MBps=.. payload_bytes=..
 * Latency is one-way (round trip / 2), per batch of round trips; best and
 * median over the batches. Batches are short and repeated within a time
 * budget: on a shared machine two busy-polling ranks are often not running at
 * the same time, and the best short batch is one where they were.
 * payload_bytes counts every message byte both ways. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAT_BYTES 8
#define LAT_WARMUP 200
#define LAT_ITERS 20
#define LAT_MIN_BATCHES 20
#define LAT_MAX_BATCHES 5000
#define LAT_BUDGET_S 2.0
#define BW_BYTES (1 << 20)
#define BW_WARMUP 5
#define BW_ITERS 5
#define BW_MIN_BATCHES 3
#define BW_MAX_BATCHES 40
#define BW_BUDGET_S 1.0

static long long payload;

static double batch(char *buf, int bytes, int iters, int rank)
{
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    payload += 2LL * bytes * iters;
    return (MPI_Wtime() - t0) / (2.0 * iters);
}

/* Rank 0 decides whether another batch fits the budget; both ranks follow. */
static int more(int done, int min, int max, double t0, double budget)
{
    int go = done < min || (done < max && MPI_Wtime() - t0 < budget);
    MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return go;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rank, size;
    char host[256], peer[256];
    static double lat[LAT_MAX_BATCHES];
    double bw_best = 0.0, t0;
    int nlat = 0, nbw = 0;
    char *buf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    if (size != 2) {
        if (rank == 0)
            printf("MPIMATRIX pingpong error=needs exactly 2 ranks, got %d\n", size);
        MPI_Finalize();
        return 1;
    }
    if (rank == 0)
        MPI_Recv(peer, sizeof peer, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(host, (int)strlen(host) + 1, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    buf = calloc(BW_BYTES, 1);

    batch(buf, LAT_BYTES, LAT_WARMUP, rank);
    t0 = MPI_Wtime();
    while (more(nlat, LAT_MIN_BATCHES, LAT_MAX_BATCHES, t0, LAT_BUDGET_S))
        lat[nlat++] = batch(buf, LAT_BYTES, LAT_ITERS, rank) * 1e6;
    batch(buf, BW_BYTES, BW_WARMUP, rank);
    t0 = MPI_Wtime();
    while (more(nbw++, BW_MIN_BATCHES, BW_MAX_BATCHES, t0, BW_BUDGET_S)) {
        double mbps = BW_BYTES / batch(buf, BW_BYTES, BW_ITERS, rank) / 1e6;
        if (mbps > bw_best)
            bw_best = mbps;
    }
    qsort(lat, nlat, sizeof lat[0], cmp);
    if (rank == 0) {
        printf("MPIMATRIX pingpong label=%s hosts=%s,%s lat_bytes=%d lat_best_us=%.3f "
               "lat_median_us=%.3f lat_batches=%d bw_bytes=%d bw_best_MBps=%.1f "
               "payload_bytes=%lld\n",
               argc > 1 ? argv[1] : "-", host, peer, LAT_BYTES, lat[0], lat[nlat / 2],
               nlat, BW_BYTES, bw_best, payload);
        fflush(stdout);
    }
    free(buf);
    /* MPICH 4.0 over UCX-TCP can hang in MPI_Finalize when ranks arrive at
     * different times; a barrier first avoids it. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

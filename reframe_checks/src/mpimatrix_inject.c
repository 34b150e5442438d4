/* Regression injector: PMPI wrappers preloaded into a benchmark (LD_PRELOAD) to
 * make a real MPI run slower by a known amount. Configured by
 * MPIMATRIX_INJECT_SPEC, a comma-separated list of
 *   clock=F     every interval the benchmark times with MPI_Wtime grows by the
 *               fraction F (0.25: times +25 %, rates / 1.25), exactly
 *   msg_us=U    busy-wait U microseconds in every message sent (Send, Isend,
 *               Ssend, Sendrecv, Put, Get, Accumulate)
 *   byte_ns=B   and B nanoseconds per byte of that message
 *   coll_us=C   busy-wait C microseconds in every collective call
 * Unset or empty: no effect. The spec in force is printed once by rank 0:
 *   MPIMATRIX inject spec=<spec>
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double clock_factor, msg_us, byte_ns, coll_us;
static double t_origin = -1.0;
static int configured;

static void configure(void)
{
    const char *spec = getenv("MPIMATRIX_INJECT_SPEC");
    char buf[256], *tok, *save = NULL;
    int rank = 0;

    configured = 1;
    if (!spec || !*spec)
        return;
    strncpy(buf, spec, sizeof buf - 1);
    buf[sizeof buf - 1] = '\0';
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        double v;
        char key[32];
        if (sscanf(tok, "%31[a-z_]=%lf", key, &v) != 2)
            continue;
        if (!strcmp(key, "clock")) clock_factor = v;
        else if (!strcmp(key, "msg_us")) msg_us = v;
        else if (!strcmp(key, "byte_ns")) byte_ns = v;
        else if (!strcmp(key, "coll_us")) coll_us = v;
    }
    t_origin = PMPI_Wtime();
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("MPIMATRIX inject spec=%s\n", spec);
}

static void spin_us(double us)
{
    double end;
    if (us <= 0)
        return;
    end = PMPI_Wtime() + us * 1e-6;
    while (PMPI_Wtime() < end)
        ;
}

static void message_delay(int count, MPI_Datatype type)
{
    int size = 0;
    if (msg_us <= 0 && byte_ns <= 0)
        return;
    PMPI_Type_size(type, &size);
    spin_us(msg_us + byte_ns * 1e-3 * (double)count * size);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    configure();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    configure();
    return rc;
}

double MPI_Wtime(void)
{
    double t = PMPI_Wtime();
    if (clock_factor == 0 || t_origin < 0)
        return t;
    return t_origin + (t - t_origin) * (1.0 + clock_factor);
}

/* -- messages -------------------------------------------------------------------- */
#define SEND_ARGS const void *buf, int count, MPI_Datatype type, int dest, int tag, \
    MPI_Comm comm
int MPI_Send(SEND_ARGS)
{
    message_delay(count, type);
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Ssend(SEND_ARGS)
{
    message_delay(count, type);
    return PMPI_Ssend(buf, count, type, dest, tag, comm);
}

int MPI_Isend(SEND_ARGS, MPI_Request *req)
{
    message_delay(count, type);
    return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                 MPI_Comm comm, MPI_Status *status)
{
    message_delay(scount, stype);
    return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
                         comm, status);
}

#define RMA_TARGET int trank, MPI_Aint tdisp, int tcount, MPI_Datatype ttype
int MPI_Put(const void *buf, int count, MPI_Datatype type, RMA_TARGET, MPI_Win win)
{
    message_delay(count, type);
    return PMPI_Put(buf, count, type, trank, tdisp, tcount, ttype, win);
}

int MPI_Get(void *buf, int count, MPI_Datatype type, RMA_TARGET, MPI_Win win)
{
    message_delay(count, type);
    return PMPI_Get(buf, count, type, trank, tdisp, tcount, ttype, win);
}

int MPI_Accumulate(const void *buf, int count, MPI_Datatype type, RMA_TARGET, MPI_Op op,
                   MPI_Win win)
{
    message_delay(count, type);
    return PMPI_Accumulate(buf, count, type, trank, tdisp, tcount, ttype, op, win);
}

/* -- collectives ------------------------------------------------------------------- */
int MPI_Barrier(MPI_Comm comm)
{
    spin_us(coll_us);
    return PMPI_Barrier(comm);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    spin_us(coll_us);
    return PMPI_Bcast(buf, count, type, root, comm);
}

int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    spin_us(coll_us);
    return PMPI_Allreduce(s, r, count, type, op, comm);
}

int MPI_Reduce(const void *s, void *r, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm)
{
    spin_us(coll_us);
    return PMPI_Reduce(s, r, count, type, op, root, comm);
}

int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  MPI_Comm comm)
{
    spin_us(coll_us);
    return PMPI_Allgather(s, sc, st, r, rc, rt, comm);
}

int MPI_Allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[],
                   const int displs[], MPI_Datatype rt, MPI_Comm comm)
{
    spin_us(coll_us);
    return PMPI_Allgatherv(s, sc, st, r, rcs, displs, rt, comm);
}

int MPI_Gather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
               int root, MPI_Comm comm)
{
    spin_us(coll_us);
    return PMPI_Gather(s, sc, st, r, rc, rt, root, comm);
}

int MPI_Scatter(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                int root, MPI_Comm comm)
{
    spin_us(coll_us);
    return PMPI_Scatter(s, sc, st, r, rc, rt, root, comm);
}

int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                 MPI_Comm comm)
{
    spin_us(coll_us);
    return PMPI_Alltoall(s, sc, st, r, rc, rt, comm);
}

int MPI_Reduce_scatter(const void *s, void *r, const int rcs[], MPI_Datatype type,
                       MPI_Op op, MPI_Comm comm)
{
    spin_us(coll_us);
    return PMPI_Reduce_scatter(s, r, rcs, type, op, comm);
}

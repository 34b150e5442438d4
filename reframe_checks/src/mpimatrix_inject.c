/* Regression injector: PMPI wrappers preloaded into a benchmark (LD_PRELOAD) to
 * make a real MPI run slower by a known amount. Configured by
 * MPIMATRIX_INJECT_SPEC, a comma-separated list of
 *   clock=F     every interval the benchmark times with MPI_Wtime grows by the
 *               fraction F (0.25: times +25 %, rates / 1.25), exactly
 *   msg_us=U    busy-wait U microseconds in every message sent (Send, Isend,
 *               Ssend, Sendrecv, Put, Get, Accumulate)
 *   byte_ns=B   and B nanoseconds per byte of that message
 *   coll_us=C   busy-wait C microseconds in every collective call
 *   finalize_hang_s=S  sleep S seconds in MPI_Finalize, after the benchmark has
 *               printed its results: the way Debian's MPICH 4.0.2 hangs between
 *               nodes (a test of how a hang on the way out is judged)
 * Unset or empty: no effect. The spec in force is printed once by rank 0:
 *   MPIMATRIX inject spec=<spec>
 *
 * Node meter (MPIMATRIX_METER=1, on batch partitions): from the end of MPI_Init to
 * the start of MPI_Finalize, the first rank of each node measures its kernel's busy
 * CPU time (/proc/stat), the CPU time of the node's ranks (getrusage) and that of
 * every process of the Slurm job it sees (SLURM_JOB_ID in its environment: ranks,
 * srun, Hydra's proxies; and the job's slurmstepd), and prints
 *   MPIMATRIX meter host=<h> kernel=<id> cores=<n> wall=<s> busy=<s> own=<s> job=<s>
 * busy minus the job's CPU time is what other programs used on that kernel while the
 * benchmark ran. The kernel's id is its boot time and PID namespace: the emulated
 * cluster's nodes share one kernel (and one /proc/stat) but show each a boot_id of
 * its own.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

static double clock_factor, msg_us, byte_ns, coll_us, finalize_hang_s;
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
        else if (!strcmp(key, "finalize_hang_s")) finalize_hang_s = v;
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

static MPI_Comm meter_node = MPI_COMM_NULL;
static double meter_wall0, meter_busy0, meter_own0;

/* The job's processes at the start: pid and CPU ticks. */
#define MAX_JOB_PROCS 4096
static int job_pids[MAX_JOB_PROCS];
static unsigned long long job_ticks0[MAX_JOB_PROCS];
static int job_procs;

static long read_file(const char *path, char *buf, long size)
{
    FILE *fp = fopen(path, "r");
    long n;
    if (!fp)
        return -1;
    n = (long) fread(buf, 1, size - 1, fp);
    fclose(fp);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

static unsigned long long proc_ticks(const char *pid)
{
    char path[300], buf[1024], *p;
    unsigned long long utime = 0, stime = 0;
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    if (read_file(path, buf, sizeof buf) <= 0 || !(p = strrchr(buf, ')')))
        return 0;
    /* after "pid (comm) ": state ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime stime */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
               &stime) != 2)
        return 0;
    return utime + stime;
}

/* Whether the process belongs to the Slurm job: its slurmstepd, or SLURM_JOB_ID=<job>
 * in its environment. */
static int of_job(const char *pid, const char *job)
{
    static char buf[1 << 16];
    char path[300], want[64];
    long n, i;
    snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
    snprintf(want, sizeof want, "slurmstepd: [%s.", job);
    if (read_file(path, buf, sizeof buf) > 0 && !strncmp(buf, want, strlen(want)))
        return 1;
    snprintf(path, sizeof path, "/proc/%s/environ", pid);
    snprintf(want, sizeof want, "SLURM_JOB_ID=%s", job);
    if ((n = read_file(path, buf, sizeof buf)) <= 0)
        return 0;
    for (i = 0; i < n; i += (long) strlen(buf + i) + 1)
        if (!strcmp(buf + i, want))
            return 1;
    return 0;
}

/* start: remember the job's processes; else: their CPU seconds since the start. */
static double job_seconds(int start)
{
    const char *job = getenv("SLURM_JOB_ID");
    struct dirent *e;
    unsigned long long ticks = 0;
    DIR *d;
    if (!job || !(d = opendir("/proc")))
        return 0;
    while ((e = readdir(d))) {
        int pid, k;
        if (!isdigit((unsigned char) e->d_name[0]) || !of_job(e->d_name, job))
            continue;
        pid = atoi(e->d_name);
        if (start) {
            if (job_procs < MAX_JOB_PROCS) {
                job_pids[job_procs] = pid;
                job_ticks0[job_procs++] = proc_ticks(e->d_name);
            }
            continue;
        }
        unsigned long long now = proc_ticks(e->d_name), before = 0;
        for (k = 0; k < job_procs; k++)
            if (job_pids[k] == pid)
                before = job_ticks0[k];
        ticks += now > before ? now - before : 0;
    }
    closedir(d);
    return (double) ticks / sysconf(_SC_CLK_TCK);
}

static double busy_seconds(void)
{
    unsigned long long f[8] = {0};
    FILE *fp = fopen("/proc/stat", "r");
    if (!fp)
        return -1;
    /* user nice system idle iowait irq softirq steal */
    if (fscanf(fp, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2],
               &f[3], &f[4], &f[5], &f[6], &f[7]) < 4) {
        fclose(fp);
        return -1;
    }
    fclose(fp);
    return (double)(f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / sysconf(_SC_CLK_TCK);
}

static double own_seconds(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6
        + r.ru_stime.tv_sec + r.ru_stime.tv_usec * 1e-6;
}

static void meter_start(void)
{
    const char *on = getenv("MPIMATRIX_METER");
    if (!on || strcmp(on, "1"))
        return;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &meter_node);
    PMPI_Barrier(MPI_COMM_WORLD);
    int node_rank = 0;
    PMPI_Comm_rank(meter_node, &node_rank);
    meter_wall0 = PMPI_Wtime();
    meter_busy0 = busy_seconds();
    meter_own0 = own_seconds();
    if (node_rank == 0)
        job_seconds(1);
}

static void meter_stop(void)
{
    double own, total = 0, wall, busy, job;
    int node_rank = 0;
    char host[256] = "?", kernel[64] = "?";
    FILE *fp;

    if (meter_node == MPI_COMM_NULL)
        return;
    PMPI_Barrier(MPI_COMM_WORLD);
    wall = PMPI_Wtime() - meter_wall0;
    busy = busy_seconds() - meter_busy0;
    own = own_seconds() - meter_own0;
    PMPI_Reduce(&own, &total, 1, MPI_DOUBLE, MPI_SUM, 0, meter_node);
    PMPI_Comm_rank(meter_node, &node_rank);
    PMPI_Comm_free(&meter_node);
    if (node_rank != 0 || meter_busy0 < 0)
        return;
    job = job_seconds(0);
    gethostname(host, sizeof host - 1);
    fp = fopen("/proc/stat", "r");
    if (fp) {
        char line[256], ns[64] = "";
        unsigned long long btime = 0;
        while (fgets(line, sizeof line, fp))
            if (sscanf(line, "btime %llu", &btime) == 1)
                break;
        fclose(fp);
        ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
        ns[n > 0 ? n : 0] = '\0';
        snprintf(kernel, sizeof kernel, "%llu:%s", btime, ns);
        for (char *c = kernel; *c; c++)  /* one token: pid:[4026531836] -> pid-4026531836- */
            if (*c == ' ' || *c == '[' || *c == ']' || *c == ':')
                *c = '-';
    }
    printf("MPIMATRIX meter host=%s kernel=%s cores=%ld wall=%.3f busy=%.3f own=%.3f "
           "job=%.3f\n", host, kernel, sysconf(_SC_NPROCESSORS_ONLN), wall, busy, total, job);
    fflush(stdout);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    configure();
    meter_start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    configure();
    meter_start();
    return rc;
}

int MPI_Finalize(void)
{
    meter_stop();
    if (finalize_hang_s > 0) {
        fflush(stdout);
        fflush(stderr);
        sleep((unsigned) finalize_hang_s);
    }
    return PMPI_Finalize();
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

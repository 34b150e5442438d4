/* MPI-IO write bandwidth, three ways of writing (after the Fujitsu MPI-IO study).
 *
 * usage: mpiio_bench MODE LAYOUT SYNC BYTES_PER_RANK TRIALS DIR [BLOCK]
 *   MODE    shared  one file, MPI_File_open on MPI_COMM_WORLD, a file view per rank,
 *                   MPI_File_write_at_all
 *           perfile one file per rank, MPI_File_open on MPI_COMM_SELF, same view
 *           gather  MPI_Gather to rank 0, which writes the file with POSIX pwrite
 *   LAYOUT  contiguous  rank r's bytes are one block at r*BYTES
 *           strided     blocks of BLOCK bytes (default 4096) interleave: block k of rank
 *                       r at (k*ranks + r)*BLOCK (an MPI_Type_vector file view; gather
 *                       reorders on rank 0; perfile leaves the other ranks' gaps)
 *   SYNC    cache (timed to the I/O cache) or sync (MPI_File_sync / fsync before close)
 * A trial is timed from a barrier through open, write, (sync) and close, the slowest
 * rank's time (MPI_MAX). After each trial every rank reads its own bytes back (POSIX)
 * and compares them with the trial's pattern; the files are removed.
 * Rank 0 prints:
 *   MPIIO config mode=M layout=L sync=S ranks=N bytes_per_rank=B block=K trials=T hosts=H
 *   MPIIO trial n=I time_s=T bw_MBps=W      (W = ranks*B / T / 1e6)
 *   MPIIO summary bw_MBps_min=.. bw_MBps_median=.. bw_MBps_max=..  (over the trials)
 *   MPIIO verification PASSED bytes=..     or   MPIIO verification FAILED ...
 * Exit status 1 on a failed verification or an I/O error. MPIIO_BENCH_CORRUPT=1 (a test
 * hook) overwrites one byte of the last rank's after the first trial's write. */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int rank, nranks;

static unsigned char pattern(int r, long long i, int trial)
{
    return (unsigned char)((i * 31 + (i >> 8) * 7 + r * 101 + trial * 13 + 1) & 0xff);
}

static void die(const char *what, int err)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (err != MPI_SUCCESS)
        MPI_Error_string(err, msg, &len);
    else
        snprintf(msg, sizeof msg, "%s", strerror(errno));
    fprintf(stderr, "MPIIO error rank %d: %s: %s\n", rank, what, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(call) do { int e_ = (call); if (e_ != MPI_SUCCESS) die(#call, e_); } while (0)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Offset in the file of byte i of rank r (the rank's own file for perfile). */
static long long file_offset(int strided, int r, long long i, long long bytes,
                             long long block, int nr)
{
    if (!strided)
        return (long long)r * bytes + i;
    return ((i / block) * nr + r) * block + i % block;
}

static double write_mpiio(MPI_Comm comm, const char *path, int strided, int dosync,
                          const unsigned char *buf, long long bytes, long long block)
{
    MPI_File fh;
    MPI_Datatype vec, ftype;
    int me = 0, nr = nranks;
    MPI_Comm_rank(comm, &me);
    if (comm == MPI_COMM_SELF)
        me = rank;  /* its own file: same offsets as its place in the shared file */
    double t0 = MPI_Wtime();
    CHECK(MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    if (strided) {
        CHECK(MPI_Type_vector((int)(bytes / block), (int)block, (int)(nr * block), MPI_BYTE,
                              &vec));
        CHECK(MPI_Type_create_resized(vec, 0, (MPI_Aint)(nr * bytes), &ftype));
        CHECK(MPI_Type_commit(&ftype));
        CHECK(MPI_File_set_view(fh, (MPI_Offset)(me * block), MPI_BYTE, ftype, "native",
                                MPI_INFO_NULL));
        CHECK(MPI_File_write_at_all(fh, 0, buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE));
        MPI_Type_free(&ftype);
        MPI_Type_free(&vec);
    } else {
        CHECK(MPI_File_set_view(fh, (MPI_Offset)me * bytes, MPI_BYTE, MPI_BYTE, "native",
                                MPI_INFO_NULL));
        CHECK(MPI_File_write_at_all(fh, 0, buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE));
    }
    if (dosync)
        CHECK(MPI_File_sync(fh));
    CHECK(MPI_File_close(&fh));
    return MPI_Wtime() - t0;
}

static double write_gather(const char *path, int strided, int dosync,
                           const unsigned char *buf, long long bytes, long long block,
                           unsigned char *all, unsigned char *out)
{
    double t0 = MPI_Wtime();
    CHECK(MPI_Gather(buf, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0,
                     MPI_COMM_WORLD));
    if (rank == 0) {
        const unsigned char *src = all;
        long long total = bytes * nranks;
        if (strided) {
            for (int r = 0; r < nranks; r++)
                for (long long i = 0; i < bytes; i += block)
                    memcpy(out + file_offset(1, r, i, bytes, block, nranks),
                           all + r * bytes + i, (size_t)block);
            src = out;
        }
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0)
            die("open", MPI_SUCCESS);
        for (long long done = 0; done < total;) {
            ssize_t n = pwrite(fd, src + done, (size_t)(total - done), (off_t)done);
            if (n <= 0)
                die("pwrite", MPI_SUCCESS);
            done += n;
        }
        if (dosync && fsync(fd) != 0)
            die("fsync", MPI_SUCCESS);
        if (close(fd) != 0)
            die("close", MPI_SUCCESS);
    }
    /* the trial ends when the file is written: the others wait for rank 0 */
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

/* Read this rank's bytes back; the number of wrong bytes (the first one reported). */
static long long verify(const char *path, int strided, int r, long long bytes,
                        long long block, int trial, unsigned char *back)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "MPIIO verify rank %d: cannot open %s: %s\n", r, path,
                strerror(errno));
        return bytes;
    }
    long long wrong = 0, step = strided ? block : bytes;
    for (long long i = 0; i < bytes; i += step) {
        off_t off = (off_t)file_offset(strided, r, i, bytes, block, nranks);
        ssize_t n = pread(fd, back + i, (size_t)step, off);
        if (n != step) {
            fprintf(stderr, "MPIIO verify rank %d: short read at offset %lld (%zd of %lld)\n",
                    r, (long long)off, n, step);
            close(fd);
            return bytes - i;
        }
    }
    close(fd);
    for (long long i = 0; i < bytes; i++) {
        if (back[i] != pattern(r, i, trial)) {
            if (!wrong)
                fprintf(stderr, "MPIIO verify rank %d trial %d: byte %lld (file offset %lld) "
                        "is %d, expected %d\n", r, trial, i,
                        file_offset(strided, r, i, bytes, block, nranks), back[i],
                        pattern(r, i, trial));
            wrong++;
        }
    }
    return wrong;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 7) {
        if (rank == 0)
            fprintf(stderr, "usage: %s shared|perfile|gather contiguous|strided cache|sync "
                    "BYTES_PER_RANK TRIALS DIR [BLOCK]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    const char *mode = argv[1], *layout = argv[2], *syncarg = argv[3], *dir = argv[6];
    long long bytes = atoll(argv[4]), block = argc > 7 ? atoll(argv[7]) : 4096;
    int trials = atoi(argv[5]);
    int corrupt = getenv("MPIIO_BENCH_CORRUPT") != NULL;
    int strided = strcmp(layout, "strided") == 0, dosync = strcmp(syncarg, "sync") == 0;
    int m = !strcmp(mode, "shared") ? 0 : !strcmp(mode, "perfile") ? 1
            : !strcmp(mode, "gather") ? 2 : -1;
    if (block > bytes)
        block = bytes;
    if (m < 0 || (!strided && strcmp(layout, "contiguous")) || (!dosync && strcmp(syncarg,
            "cache")) || bytes <= 0 || trials <= 0 || block <= 0 || bytes % block
            || bytes > (1LL << 30)) {
        if (rank == 0)
            fprintf(stderr, "MPIIO bad arguments: %s %s %s %s %s (BYTES a multiple of "
                    "BLOCK, at most 1 GiB)\n", mode, layout, syncarg, argv[4], argv[5]);
        MPI_Finalize();
        return 2;
    }

    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int hlen;
    MPI_Get_processor_name(host, &hlen);
    char *hosts = rank == 0 ? malloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME,
               MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("MPIIO config mode=%s layout=%s sync=%s ranks=%d bytes_per_rank=%lld "
               "block=%lld trials=%d hosts=", mode, layout, syncarg, nranks, bytes,
               strided ? block : bytes, trials);
        for (int r = 0; r < nranks; r++)
            printf("%s%s", r ? "," : "", hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME);
        printf("\n");
        fflush(stdout);
    }

    /* one name per run: rank 0's pid, shared with all */
    int tag = (int)getpid();
    MPI_Bcast(&tag, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char path[4096];
    if (m == 1)
        snprintf(path, sizeof path, "%s/mpiio_bench.%d.rank%d.dat", dir, tag, rank);
    else
        snprintf(path, sizeof path, "%s/mpiio_bench.%d.dat", dir, tag);

    unsigned char *buf = malloc((size_t)bytes), *back = malloc((size_t)bytes);
    unsigned char *all = NULL, *out = NULL;
    if (m == 2 && rank == 0) {
        all = malloc((size_t)(bytes * nranks));
        out = malloc((size_t)(bytes * nranks));
    }
    double *times = malloc(sizeof(double) * (size_t)trials);
    long long wrong_total = 0;
    double total_mb = (double)bytes * nranks / 1e6;
    for (int t = 0; t < trials; t++) {
        for (long long i = 0; i < bytes; i++)
            buf[i] = pattern(rank, i, t);
        MPI_Barrier(MPI_COMM_WORLD);
        double mine = m == 2 ? write_gather(path, strided, dosync, buf, bytes, block, all, out)
                             : write_mpiio(m == 1 ? MPI_COMM_SELF : MPI_COMM_WORLD, path,
                                           strided, dosync, buf, bytes, block);
        double slowest;
        MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);  /* every file closed before anyone reads */
        if (corrupt && t == 0 && rank == nranks - 1) {  /* test hook: one wrong byte */
            int fd = open(path, O_WRONLY);
            unsigned char bad = (unsigned char)~pattern(rank, 0, t);
            off_t off = (off_t)file_offset(strided, rank, 0, bytes, block, nranks);
            if (fd < 0 || pwrite(fd, &bad, 1, off) != 1)
                die("corrupt", MPI_SUCCESS);
            close(fd);
        }
        long long wrong = verify(path, strided, rank, bytes, block, t, back);
        long long wrong_all = 0;
        MPI_Allreduce(&wrong, &wrong_all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        wrong_total += wrong_all;
        if (m == 1 || rank == 0)
            unlink(path);
        if (rank == 0) {
            times[t] = slowest;
            printf("MPIIO trial n=%d time_s=%.6e bw_MBps=%.2f%s\n", t + 1, slowest,
                   total_mb / slowest, wrong_all ? " verify=FAILED" : "");
            fflush(stdout);
        }
        if (wrong_all)
            break;  /* a wrong byte is a failure: no more trials to time */
    }
    if (rank == 0) {
        if (!wrong_total) {
            for (int t = 0; t < trials; t++)
                times[t] = total_mb / times[t];  /* bandwidths, MB/s */
            qsort(times, (size_t)trials, sizeof(double), cmp_double);
            double med = trials % 2 ? times[trials / 2]
                                    : (times[trials / 2 - 1] + times[trials / 2]) / 2;
            printf("MPIIO summary bw_MBps_min=%.2f bw_MBps_median=%.2f bw_MBps_max=%.2f\n",
                   times[0], med, times[trials - 1]);
            printf("MPIIO verification PASSED bytes=%lld\n", bytes * nranks * trials);
        } else {
            printf("MPIIO verification FAILED wrong_bytes=%lld\n", wrong_total);
        }
        fflush(stdout);
    }
    free(buf); free(back); free(all); free(out); free(times); free(hosts);
    MPI_Finalize();
    return wrong_total ? 1 : 0;
}

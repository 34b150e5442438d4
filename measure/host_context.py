"""The host's context around a measured session, for measure/noise_sources.py: CPU ticks
(steal time, other processes' CPU seconds), the free memory handed back to the host (free
page reporting), the busiest processes, and a CPU0<->CPU1 cache-line round trip (a small
C probe, built here) that tells the host's vCPU placement phase apart from what the suite
does."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

C2C_SOURCE = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static _Alignas(64) atomic_int flag;
enum { N = 20000, W = 9 };
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static void *pong(void *a) { (void)a; pin(1);
  for (long i = 0; i < (long)(W + 1) * N; i++) {
    while (atomic_load_explicit(&flag, memory_order_acquire) != 1) {}
    atomic_store_explicit(&flag, 0, memory_order_release); }
  return 0; }
static void ping(void) { atomic_store_explicit(&flag, 1, memory_order_release);
  while (atomic_load_explicit(&flag, memory_order_acquire) != 0) {} }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a,
  y = *(const double *)b; return (x > y) - (x < y); }
int main(void) { pthread_t t; double r[W]; pin(0); pthread_create(&t, 0, pong, 0);
  for (int i = 0; i < N; i++) ping();
  for (int w = 0; w < W; w++) { double t0 = now(); for (int i = 0; i < N; i++) ping();
    r[w] = (now() - t0) / N; }
  pthread_join(t, 0); qsort(r, W, sizeof r[0], cmp);
  printf("%.1f %.1f %.1f\n", r[W / 2], r[0], r[W - 1]); return 0; }
"""


def cpu_ticks() -> dict[str, int]:
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:9]
    return dict(zip(names, map(int, fields), strict=False))


def reported_kib() -> int | None:
    """Free memory the guest has handed back to the host so far (free page reporting):
    touching such pages again faults in the host."""
    f = Path("/sys/module/page_reporting/parameters/reported_kib")
    return int(f.read_text()) if f.exists() else None


def _proc_ticks() -> dict[int, tuple[str, int]]:
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                st = (d / "stat").read_text()
            except OSError:
                continue
            rest = st[st.rindex(")") + 2:].split()
            out[int(d.name)] = (st[st.index("(") + 1:st.rindex(")")],
                                int(rest[11]) + int(rest[12]))
    return out


def busiest(n: int = 3, window: float = 0.5) -> list[str]:
    """The processes that used most CPU in the last `window` seconds (% of one CPU);
    unlike ps's pcpu, which averages over a process's whole life."""
    a = _proc_ticks()
    time.sleep(window)
    b = _proc_ticks()
    hz = os.sysconf("SC_CLK_TCK")
    use = sorted(((100 * (t - a[p][1]) / hz / window, c) for p, (c, t) in b.items()
                  if p in a and t > a[p][1]), reverse=True)
    return [f"{pct:.0f} {comm}" for pct, comm in use[:n]] or ["idle"]


def build_c2c(workdir: Path) -> Path | None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or (os.cpu_count() or 1) < 2:
        return None
    src, exe = workdir / "c2c.c", workdir / "c2c"
    src.write_text(C2C_SOURCE)
    proc = subprocess.run([cc, "-O2", "-pthread", str(src), "-o", str(exe)],
                          capture_output=True, text=True, check=False)
    return exe if proc.returncode == 0 else None


def run_c2c(exe: Path | None) -> float | None:
    """Median core-to-core round trip CPU0<->CPU1 in ns (None without a probe)."""
    if exe is None:
        return None
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=False).stdout
    return float(out.split()[0]) if out.strip() else None

"""A rank that died of a signal: which signal, where, in which MPI call, top frame.

MPI runtimes print a backtrace when a rank faults, each in its own format:

- Open MPI (opal's handler): `[node4:1234] Signal: Segmentation fault (11)`, then
  frames `[node4:1234] [ 1] /p/libmpi.so.40(mca_pml_ob1_recv_frag_callback_match+0x8c)[0x7f..]`;
- UCX (MPICH ch4:ucx, Open MPI's pml/ucx): `[node1:1234:0:1234] Caught signal 11
  (Segmentation fault: address not mapped ...)`, then ` 3  /p/libmpich.so.12(MPIDI_..+0x1a) [0x..]`;
- launchers only name the signal: `srun: error: node4: task 7: Segmentation fault`,
  Hydra `KILLED BY SIGNAL: 11 (Segmentation fault)`.

`crash_report` turns that into one line for a failure reason, e.g. "rank on node4
died of Segmentation fault (signal 11) in MPI_Init, top frame
mca_pml_ob1_recv_frag_callback_match (libmpi.so.40)". A rank killed by its
launcher after another one died (SIGKILL, SIGTERM) is no crash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Signals that mean the program itself faulted.
FAULTS = {4: "Illegal instruction", 6: "Aborted", 7: "Bus error", 8: "Floating point exception",
          11: "Segmentation fault"}

_OMPI_SIGNAL = re.compile(r"^\[([^:\]\s]+):(\d+)\] Signal: ([^(\n]+?) \((\d+)\)", re.M)
_OMPI_FRAME = re.compile(r"^\[([^:\]\s]+):(\d+)\] \[\s*\d+\] ([^\s(]+)\(([^)+]*)[^)]*\)", re.M)
_UCX_SIGNAL = re.compile(r"^\[([^:\]\s]+):(\d+):\d+(?::\d+)?\]\s+Caught signal (\d+) "
                         r"\(([^:)]+)", re.M)
_UCX_BACKTRACE = re.compile(r"==== backtrace[^\n]*\n(.*?)(?:^=+[ \t]*$|\Z)", re.S | re.M)
_UCX_FRAME = re.compile(r"^\s*\d+\s+([^\s(]+)\(([^)+]*)[^)]*\)\s+\[0x", re.M)
_SRUN_TASK = re.compile(r"srun: error: (\S+): tasks? ([\d,\-]+): ([A-Z][a-z]+(?: [a-z]+)*)")
_HYDRA = re.compile(r"KILLED BY SIGNAL: (\d+) \(([^)]+)\)")

#: Frames of signal handlers, the C library and start-up code: never the "top frame".
_NOT_TOP = re.compile(r"^(?:ucs_handle_error|ucs_error_signal_handler|ucs_debug_|"
                      r"opal_backtrace|show_stackframe|__libc_start|_start$|__restore_rt|"
                      r"raise$|abort$|gsignal)")
_SYSTEM_LIBS = re.compile(r"/(?:libc|libpthread|ld-linux[^/]*)\.so")
#: MPI entry points; PMPI_X is reported as MPI_X.
_MPI_CALL = re.compile(r"^P?MPI_([A-Z][a-z_]+)$")


@dataclass(frozen=True)
class Crash:
    host: str
    signal: int
    name: str
    frames: tuple[tuple[str, str], ...]  # (library path, symbol), innermost first

    @property
    def top_frame(self) -> str:
        """The innermost frame that is neither the handler nor the C library: the
        frames after the signal trampoline (the first C library frame without a
        symbol), if there is one."""
        frames = list(self.frames)
        tramp = next((i for i, (lib, sym) in enumerate(frames)
                      if _SYSTEM_LIBS.search(lib) and not sym), None)
        for lib, sym in frames[tramp + 1:] if tramp is not None else frames:
            if _SYSTEM_LIBS.search(lib) or (sym and _NOT_TOP.match(sym)):
                continue
            where = lib.rsplit("/", 1)[-1]
            return f"{sym} ({where})" if sym else where
        return ""

    @property
    def mpi_call(self) -> str:
        """The outermost MPI function on the stack (the one the program called)."""
        calls = [m.group(1) for _, sym in self.frames if (m := _MPI_CALL.match(sym))]
        return f"MPI_{calls[-1]}" if calls else ""

    def describe(self) -> str:
        text = f"rank on {self.host} died of {self.name} (signal {self.signal})"
        if self.mpi_call:
            text += f" in {self.mpi_call}"
        if self.top_frame:
            text += f", top frame {self.top_frame}"
        return text


def crashes(text: str) -> list[Crash]:
    """Every faulting rank with a backtrace in `text` (Open MPI or UCX format)."""
    out = []
    for m in _OMPI_SIGNAL.finditer(text):
        host, pid = m.group(1), m.group(2)
        frames = tuple((f.group(3), f.group(4)) for f in _OMPI_FRAME.finditer(text)
                       if f.group(1) == host and f.group(2) == pid)
        out.append(Crash(host, int(m.group(4)), m.group(3).strip(), frames))
    for m in _UCX_SIGNAL.finditer(text):
        bt = _UCX_BACKTRACE.search(text, m.end())
        frames = tuple((f.group(1), f.group(2))
                       for f in _UCX_FRAME.finditer(bt.group(1))) if bt else ()
        out.append(Crash(m.group(1), int(m.group(3)), m.group(4).strip(), frames))
    return [c for c in out if c.signal in FAULTS]


def crash_report(text: str) -> str:
    """One line naming the first faulting rank (and how many more), or ''."""
    found = crashes(text)
    if found:
        more = f" (+{len(found) - 1} more rank(s))" if len(found) > 1 else ""
        return found[0].describe() + more
    for m in _SRUN_TASK.finditer(text):
        if any(m.group(3).startswith(name.split()[0]) for name in FAULTS.values()):
            return f"task {m.group(2)} on {m.group(1)} died of {m.group(3)} (no backtrace)"
    m = _HYDRA.search(text)
    if m and int(m.group(1)) in FAULTS:
        return f"a rank died of {m.group(2)} (signal {m.group(1)}; no backtrace)"
    return ""

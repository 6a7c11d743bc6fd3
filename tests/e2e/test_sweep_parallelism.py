"""A sweep with --jobs 2 keeps two cores busy: its CPU time over its wall time is at least 1.6. The ratio
is not raised by a fast machine, only by work running on two cores at once; a sweep that serialises its
candidates (waiting on an earlier identical or same-layout program, a lock held while simulating) stays
near 1.0 however fast the machine is.

Other load (the machine's other users; CTest runs this test alone, RUN_SERIAL) lowers CPU over wall
without any fault of the sweep's, so where Linux reports each thread's time waiting for a core
(/proc/PID/task/TID/schedstat) that time counts with the CPU time: (on a core + runnable, waiting for
one) over wall time is how many cores the sweep had work for, whatever else runs. A thread blocked on a
future or a lock is asleep, neither on a core nor waiting for one, so serialisation still shows. Without
schedstat, the best CPU-over-wall of three attempts is taken. Skipped with fewer than two cores.

    python3 tests/e2e/test_sweep_parallelism.py [JOBS]   (JOBS: 2 unless given; 1 shows the ratio falls)
"""
import os
import resource
import subprocess
import sys
import time

from loop_support import BIN, check, goal_path, tempdir

MIN_RATIO = 1.6


def children_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def thread_schedstats(pid):
    """{thread id: (ns on a core, ns runnable waiting for a core)} of a running process; {} if unreadable."""
    stats = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return stats
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                on_core, waiting = (int(x) for x in f.read().split()[:2])
            stats[tid] = (on_core, waiting)
        except (OSError, ValueError):
            pass  # the thread has just ended
    return stats


def measure(jobs, db):
    """(CPU / wall, (on a core + waiting for one) / wall or None, wall) of one uncached sweep of 300
    configurations of the article's GEMM goal. Threads are sampled every 50 ms: what a thread does in its
    last 50 ms can be missed, which only lowers the second ratio."""
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    cpu, start = children_cpu_s(), time.monotonic()
    proc = subprocess.Popen([BIN, "sweep", goal_path("gemm-article.yaml"), "--jobs", str(jobs), "--limit", "300",
                             "--no-cache", "--db", db], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env)
    latest = {}
    while proc.poll() is None:
        latest.update(thread_schedstats(proc.pid))
        time.sleep(0.05)
    wall, cpu = time.monotonic() - start, children_cpu_s() - cpu
    stderr = proc.stderr.read()
    check(proc.returncode == 0, f"sweep exited {proc.returncode}: {stderr[-2000:]}")
    check(wall > 1.0, f"the sweep took {wall:.2f} s: too short to measure its parallelism")
    demand = sum(a + b for a, b in latest.values()) / 1e9 / wall if latest else None
    return cpu / wall, demand, wall


def main():
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2:
        print(f"SKIP: {cores} core available; a parallel sweep needs at least 2 to be measured")
        return
    seen = []
    with tempdir() as tmp:
        for attempt in range(3):
            ratio, demand, wall = measure(jobs, os.path.join(tmp, f"sweep-{attempt}.db"))
            seen.append(f"CPU/wall {ratio:.2f}" + (f", (CPU + waiting for a core)/wall {demand:.2f}"
                                                   if demand is not None else "") + f" in {wall:.1f} s")
            if ratio >= MIN_RATIO or (demand is not None and demand >= MIN_RATIO):
                print(f"ok: --jobs {jobs} sweep: " + "; ".join(seen))
                return
            if demand is not None:
                break  # the waiting time already discounts other load: another attempt would not differ
    check(False, f"a --jobs {jobs} sweep keeps fewer than {MIN_RATIO} cores busy: " + "; ".join(seen))


if __name__ == "__main__":
    main()

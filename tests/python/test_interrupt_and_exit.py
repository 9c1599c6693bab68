"""Ctrl-C during a compute cancels it; nothing crashes the interpreter at
exit (arrays, results, callbacks and even a compute on a daemon thread
alive). Each case runs in a child interpreter of its own."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest


def run_python(code, **kwargs):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ.copy(), **kwargs)


SLOW = """
    import time, strata
    x = strata.ones((400, 10), chunks=(1, 10), spec=strata.Spec(workers=2))
    def slow(b):
        time.sleep(0.05)
        return b
    y = strata.map_blocks(slow, x)   # 400 tasks of 50 ms: ~10 s on 2 workers
"""


def test_ctrl_c_cancels_the_compute(tmp_path):
    proc = run_python(SLOW + """
    import sys
    print("ready", flush=True)
    t0 = time.perf_counter()
    try:
        y.compute()
        print("finished", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted after {time.perf_counter() - t0:.2f}", flush=True)
    # The engine is still usable after a cancelled compute.
    print("again", float(strata.sum(strata.ones(10)).compute()), flush=True)
    """)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("interrupted after"), (out, err)
    assert float(lines[0].split()[-1]) < 5.0
    assert lines[1] == "again 10.0"


def test_exit_with_live_arrays_results_and_callbacks(tmp_path):
    proc = run_python("""
    import numpy as np, strata
    a = np.arange(1000.0)
    x = strata.asarray(a, chunks=100)
    r = (x * 2).compute()
    h = strata.HistoryCallback()
    s = strata.sum(x).compute(callbacks=[h])
    m = strata.map_blocks(lambda b: b + 1, x)
    keep = [x, r, h, s, m, m.compute()]
    print("ok", flush=True)
    """)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.strip() == "ok"


def test_exit_while_a_daemon_thread_computes(tmp_path):
    proc = run_python(SLOW + """
    import threading
    t = threading.Thread(target=y.compute, daemon=True)
    t.start()
    time.sleep(0.5)
    print("exiting", flush=True)
    """)
    t0 = time.perf_counter()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.strip() == "exiting"
    assert "Segmentation" not in err and "Fatal" not in err and "terminate" not in err, err
    assert time.perf_counter() - t0 < 30

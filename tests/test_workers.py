"""labkit.measure.workers and labkit.measure.threads: independent single-threaded runs.

No timing here (that is benchmarks/live_vs_bare_c.py): these check the
mechanism -- the run column, the thread counts, and that every failure of a
worker comes back as a clear exception within a bounded time.
"""

from __future__ import annotations

import errno
import os
import time

import pytest
import worker_targets  # registers the test.* worker targets

from labkit.experiments import live_kernel
from labkit.live import probe
from labkit.measure import envinfo, runner, threads, workers

pytestmark = pytest.mark.slow  # make test-fast leaves it out

T = "test."


def test_rows_come_back_with_the_run_column_and_one_thread():
    df = workers.run_in_workers(T + "rows", {"repeats": 3}, runs=2)
    assert list(df.columns[:5]) == ["experiment", "variant", "repeat", "run", "ns_per_op"]
    assert sorted(df["run"].unique()) == [0, 1]
    assert len(df) == 2 * 3 * 2
    assert (df["threads"] == 1).all() and (df["io_threads"] == 0).all()


def test_the_rotation_goes_on_from_run_to_run():
    df = workers.run_in_workers(T + "rotated_rows", runs=3)
    firsts = [d["variant"].iloc[0] for _, d in df.groupby(["run", "repeat"], sort=True)]
    # one long run of 6 rounds would start them at a, b, c, a, b, c
    assert firsts == ["a", "b", "c", "a", "b", "c"]


def test_each_run_is_a_fresh_pinned_process():
    df = workers.run_in_workers(T + "imported_modules", runs=2, cpu=runner.default_cpu())
    assert df["pid"].nunique() == 2 and os.getpid() not in set(df["pid"])
    assert set(df["affinity"]) == {str([runner.default_cpu()])}


def test_a_worker_imports_neither_pandas_nor_scipy():
    # half of a worker's start-up was pandas: the experiment modules must not import it
    df = workers.run_in_workers(T + "imported_modules", runs=1)
    assert df["heavy"].iloc[0] == ""


def test_live_rows_from_a_single_threaded_worker():
    df = live_kernel.run_syscalls(
        "zero", names=("read", "readv1"), iters=50, repeats=2, warmup=0, runs=2
    )
    assert sorted(df["run"].unique()) == [0, 1]
    assert (df["threads"] == 1).all() and (df["io_threads"] == 0).all()
    # this process (pytest, with numpy imported unpinned) may have more: the worker has one
    assert threads.count_threads().total >= 1


def test_a_raising_worker_names_the_experiment_and_keeps_the_type():
    with pytest.raises(ValueError) as info:
        workers.run_in_workers(T + "raises_value_error", runs=2)
    err = info.value
    assert isinstance(err, workers.WorkerError)
    assert err.target == T + "raises_value_error" and err.run == 0
    assert "worker run 1 of 2" in str(err) and "a bad value" in str(err)
    assert "raise ValueError" in err.worker_traceback


def test_an_os_error_keeps_its_errno():
    with pytest.raises(OSError) as info:
        workers.run_in_workers(T + "raises_os_error", runs=1)
    assert info.value.errno == errno.EINVAL and isinstance(info.value, workers.WorkerError)


def test_a_killed_worker_is_an_error():
    with pytest.raises(workers.WorkerError, match="SIGKILL") as info:
        workers.run_in_workers(T + "killed", runs=1)
    assert info.value.returncode == -9 and "about to die" in str(info.value)


def test_a_slow_worker_is_killed_at_its_deadline():
    start = time.monotonic()
    with pytest.raises(workers.WorkerTimeout, match="deadline") as info:
        workers.run_in_workers(T + "sleeps", {"seconds": 60}, runs=1, timeout=2)
    assert time.monotonic() - start < 30
    assert isinstance(info.value, TimeoutError)


def test_a_second_thread_while_measuring_is_refused():
    with pytest.raises(workers.WorkerError, match="exactly one thread") as info:
        workers.run_in_workers(T + "with_a_thread", runs=1)
    assert info.value.worker_type == "ThreadCountError"


def test_bad_requests_fail_before_any_worker_starts():
    with pytest.raises(ValueError, match="runs"):
        workers.run_in_workers(T + "rows", runs=0)
    with pytest.raises(TypeError, match="JSON"):
        workers.run_in_workers(T + "rows", {"repeats": object()}, runs=1)
    with pytest.raises(ValueError, match="not a registered worker target"):
        workers.run_in_workers(lambda: [], runs=1)
    with pytest.raises(ValueError, match="not a registered worker target"):
        workers.run_in_workers("os:system", {"command": "true"}, runs=1)
    with pytest.raises(ValueError, match="affinity"):
        workers.run_in_workers(T + "rows", runs=1, cpu=10_000)


def test_registration_needs_an_id_and_a_module_level_function():
    with pytest.raises(ValueError, match="dotted words"):
        workers.target("os:system")(worker_targets.rows)
    with pytest.raises(ValueError, match="module-level"):
        workers.target("test.lambda")(lambda: [])
    with pytest.raises(ValueError, match="already"):
        workers.target("test.rows")(worker_targets.killed)


def test_a_worker_refuses_an_id_its_registry_does_not_hold(tmp_path):
    # a forged spec: a known module, an id it does not register; nothing runs

    spec = {
        "target": "test.no_such_target",
        "home": "worker_targets",
        "kwargs": {},
        "cpu": None,
        "out": str(tmp_path / "rows.pkl"),
        "error": str(tmp_path / "error.json"),
        "single_thread": False,
        "allow_io_threads": True,
        "run": 0,
    }
    assert workers.worker_main(spec) == 3
    assert "not a registered worker target" in (tmp_path / "error.json").read_text()
    assert not (tmp_path / "rows.pkl").exists()
    spec["target"], spec["home"] = "test.rows", "labkit.measure.runner"
    assert workers.worker_main(spec) == 3
    assert "is registered by worker_targets" in (tmp_path / "error.json").read_text()


def test_a_target_must_return_rows_and_runs_do_not_nest():
    with pytest.raises(TypeError, match="row dicts"):
        workers.run_in_workers(T + "not_rows", runs=1)
    with pytest.raises(RuntimeError, match="do not nest"):
        workers.run_in_workers(T + "nested", runs=1)


def test_count_threads_tells_io_uring_threads_apart(tmp_path):
    for tid, comm in [("10", "python"), ("11", "iou-wrk-10"), ("12", "iou-sqp-10")]:
        (tmp_path / tid).mkdir()
        (tmp_path / tid / "comm").write_text(comm + "\n")
    seen = threads.count_threads(tmp_path)
    assert (seen.threads, seen.io_threads, seen.total) == (1, 2, 3)
    assert threads.count_threads(tmp_path / "absent") is None


def test_the_rule_allows_io_threads_only_when_asked(monkeypatch):
    seen = threads.ThreadCount(threads=1, io_threads=1)
    monkeypatch.setattr(threads, "count_threads", lambda: seen)
    try:
        threads.require_single_thread(threads.Rule(allow_io_threads=True))
        assert threads.observe("x", "before") == seen
        threads.require_single_thread(threads.Rule(allow_io_threads=False))
        with pytest.raises(threads.ThreadCountError, match="io_uring"):
            threads.observe("x", "before")
    finally:
        threads.require_single_thread(None)
    assert not threads.watching()


@pytest.mark.skipif(not probe()["available"], reason="io_uring unavailable")
def test_io_wq_threads_are_counted_not_hidden():
    # a tmpfs read may not complete inline: io_uring then hands it to an io-wq thread,
    # which shares the file table.  Allowed (and counted) for io_uring experiments,
    # refused where the rule says no io_uring thread.
    kwargs = {
        "target": "tmpfs",
        "ops": ["read"],
        "length": 4096,
        "iters": 20,
        "repeats": 2,
        "warmup": 1,
        "register_ring_fd": False,
        "cpu": None,
        "clock_name": "wall",
    }
    name = "live.uring_qd1"
    df = workers.run_in_workers(name, kwargs, runs=1)
    assert (df["threads"] == 1).all()
    if df["io_threads"].max() > 0:
        with pytest.raises(workers.WorkerError, match="no io_uring thread"):
            workers.run_in_workers(name, kwargs, runs=1, allow_io_threads=False)
    else:
        strict = workers.run_in_workers(name, kwargs, runs=1, allow_io_threads=False)
        assert (strict["io_threads"] == 0).all()


def test_the_environment_record_states_the_measuring_threads():
    rec = envinfo.measuring_threads()
    assert rec["worker"] == 1 and rec["worker_io_threads"] == 0
    assert rec["this_process"] >= 1 and "worker" in rec["how"]


# ---- nothing measured is lost; nothing is left behind -----------------


@pytest.mark.parametrize("how", ["kill", "exit0", "raise", "hang"])
def test_finished_runs_survive_a_later_failure(tmp_path, how):
    """Runs 1 and 2 finished; run 3 is SIGKILLed, exits 0 without rows, raises or hangs."""
    kwargs = {"counter": str(tmp_path / "n"), "how": how}
    with pytest.raises(workers.WorkerError) as info:
        workers.run_in_workers(T + "fails_on_third", kwargs, runs=3, timeout=20)
    err = info.value
    assert err.run == 2
    assert list(err.partial["run"]) == [0, 1] and list(err.partial["ns"]) == [0.0, 1.0]
    assert "runs 1-2 of 3 finished" in str(err) and ".partial" in str(err)


def test_rows_whose_keys_differ_fail_naming_the_difference(tmp_path):
    kwargs = {"counter": str(tmp_path / "n"), "how": "keys"}
    with pytest.raises(workers.WorkerError, match="'extra'") as info:
        workers.run_in_workers(T + "fails_on_third", kwargs, runs=3)
    assert "run 3" in str(info.value) and "run 1" in str(info.value)
    assert list(info.value.partial["run"]) == [0, 1]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie: dead
    except FileNotFoundError:
        return True


def test_a_timeout_ends_the_workers_whole_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    with pytest.raises(workers.WorkerTimeout):
        workers.run_in_workers(
            T + "hangs_with_a_child", {"pidfile": str(pidfile)}, runs=1, timeout=8
        )
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not _gone(child):
        os.kill(child, 9)
        pytest.fail(f"the worker's child {child} survived the worker's timeout")


def test_temporary_folders_of_a_killed_parent_are_removed(tmp_path, monkeypatch):
    """A SIGKILLed parent left /tmp/labkit-workers-* behind; the next run removes it."""
    import signal
    import subprocess
    import sys
    import tempfile

    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import worker_targets\n"
        "from labkit.measure import workers\n"
        "workers.run_in_workers('test.sleeps', {'seconds': 60}, runs=1, timeout=120)\n"
    )
    env = dict(os.environ, TMPDIR=str(tmp_path))
    here = os.path.dirname(__file__)
    parent = subprocess.Popen([sys.executable, "-c", code, here], env=env)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("labkit-workers-*/run0.spec.json")):
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.1)
    time.sleep(0.5)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert list(tmp_path.glob("labkit-workers-*"))  # left behind by the kill
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    df = workers.run_in_workers(T + "rows", runs=1)
    assert len(df) and list(tmp_path.glob("labkit-workers-*")) == []

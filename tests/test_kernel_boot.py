"""``labkit kernel boot``: a real 6.1 kernel (user-mode-linux) beside the host.

The outcomes are return values and errnos, never timings.  The boots are
skipped, with the command that installs it, where user-mode-linux is absent;
the committed result and the parser are checked everywhere.  A boot takes
about 2-3 s here, so the live tests boot twice (plain, and with the xstate
shim forced) plus one boot cut short by its timeout.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pandas as pd
import pytest

from labkit.kernelsrc import boot
from labkit.kernelsrc import fingerprint as fpr
from labkit.kernelsrc.boot import BootTimeout
from labkit.kernelsrc.fingerprint import CASES, FINGERPRINT, BootError

pytestmark = pytest.mark.slow  # make test-fast leaves it out

MISSING = boot.unavailable()
needs_uml = pytest.mark.skipif(bool(MISSING), reason=f"kernel boot: {MISSING}")


def _output(cases: dict[str, tuple[int, int]], *, end: bool = True, release="6.1.176") -> str:
    lines = ["Linux version 6.1.176 (console noise)", "LABKIT-FP begin"]
    lines += [f"LABKIT-FP uname {release} x86_64", "LABKIT-FP page 4096"]
    lines += [f"LABKIT-FP case {c} {r} {e}" for c, (r, e) in cases.items()]
    if end:
        lines += ["LABKIT-FP end", "reboot: System halted"]
    return "\n".join(lines) + "\n"


ALL_OK = {c: (8192, 0) for c in CASES}


# ---- parsing and the rules (no boot) ---------------------------------------------------------


def test_parse_reads_the_records_among_console_lines():
    cases = dict(ALL_OK, readv1_ssize_max=(-1, 14), readv1_negative=(-1, 22))
    fp = fpr.parse(_output(cases), "uml")
    assert (fp.release, fp.machine, fp.page) == ("6.1.176", "x86_64", 4096)
    assert list(fp.cases) == list(CASES)
    assert fp.result(FINGERPRINT) == "EFAULT"
    assert fp.result("readv1_negative") == "EINVAL"
    assert fp.result("readv1_two_pages") == "8192"
    frame = fp.frame()
    assert list(frame.columns) == fpr.COLUMNS and len(frame) == len(CASES)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "no output"),
        ("kernel panic\n", "no output"),
        (_output(ALL_OK, end=False), "incomplete"),
        (_output({c: v for c, v in ALL_OK.items() if c != FINGERPRINT}), FINGERPRINT),
        ("LABKIT-FP begin\nLABKIT-FP error open-dev-zero 2\n", "program failed"),
        (_output(ALL_OK).replace("8192 0", "x 0", 1), "malformed"),
    ],
)
def test_parse_refuses_incomplete_or_failed_output(text, words):
    with pytest.raises(BootError, match=words):
        fpr.parse(text, "uml")


def test_fingerprint_rule_and_kernel_versions():
    assert fpr.kernel_version("6.1.176") == (6, 1)
    assert fpr.kernel_version("6.18.44-fc-v1147") == (6, 18)
    assert fpr.expected_fingerprint("6.3.13") == "EFAULT"
    assert fpr.expected_fingerprint("6.4.0") == "8192"
    assert fpr.expected_fingerprint("6.12.1", page=16384) == "32768"
    with pytest.raises(ValueError, match="not a kernel release"):
        fpr.kernel_version("vmlinux")


def test_xstate_shim_fallback_is_needed_on_amx_hosts_only():
    assert boot.host_needs_xstate_shim("flags\t\t: fpu sse avx2 amx_tile amx_int8\n")
    assert not boot.host_needs_xstate_shim("flags\t\t: fpu sse avx2 xsave\n")
    assert not boot.host_needs_xstate_shim("model name: amx_tile in a name, not a flag\n")


def test_side_by_side_names_both_kernels():
    uml = fpr.parse(_output(dict(ALL_OK, readv1_ssize_max=(-1, 14))), "uml").frame()
    host = fpr.parse(_output(ALL_OK, release="6.18.1"), "host").frame()
    table = fpr.side_by_side(pd.concat([uml, host]))
    assert list(table.columns) == ["call", "6.1.176 (UML)", "6.18.1 (host)", "same"]
    assert table["same"].tolist() == [c != FINGERPRINT for c in CASES]
    with pytest.raises(ValueError, match="both"):
        fpr.side_by_side(uml)


def test_missing_uml_names_the_apt_command(monkeypatch):
    monkeypatch.setattr(boot, "uml_binary", lambda: None)
    assert boot.UML_INSTALL_HINT in boot.unavailable()
    with pytest.raises(BootError, match="apt-get install -y user-mode-linux"):
        boot.boot_uml()


def test_missing_static_libc_names_the_apt_command(monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "gcc"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--version*) echo fake-gcc 1; exit 0;; esac\n'
        "echo '/usr/bin/ld: cannot find -lc: No such file or directory' >&2\nexit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("LABKIT_KERNEL_CACHE", str(tmp_path / "cache"))
    with pytest.raises(BootError, match="apt-get install -y gcc libc6-dev"):
        boot.program()


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="shim"):
        boot.boot_uml(shim="sometimes")
    with pytest.raises(ValueError, match="timeout"):
        boot.boot_uml(timeout=0)
    with pytest.raises(BootError, match="no user-mode-linux kernel at /nonexistent"):
        boot.boot_uml(uml="/nonexistent/linux.uml")
    for short in (100, 1 << 20):
        with pytest.raises(ValueError, match="XMM0"):
            boot.xstate_probe(short)


# ---- the xstate shim, without UML: a write shorter than the host's area ---------------------


@pytest.fixture(scope="module")
def host_xstate():
    try:
        return boot.xstate_probe(shim=False)
    except BootError as exc:
        pytest.skip(f"xstate probe: {exc}")


def test_a_short_xstate_write_is_refused_and_the_shim_repairs_it(host_xstate):
    """What UML 6.1 meets on an AMX host, reproduced on any host whose area exceeds 512 bytes."""
    if host_xstate.size <= 512:
        pytest.skip(
            f"this host's XSAVE area is {host_xstate.size} bytes: a legacy-only write is whole"
        )
    assert (host_xstate.ret, host_xstate.errno, host_xstate.kept) == (-1, 14, False)
    shimmed = boot.xstate_probe(shim=True)
    assert shimmed.size == host_xstate.size
    assert (shimmed.ret, shimmed.errno) == (0, 0)
    assert shimmed.kept  # the marker written, every byte after the short write as it was


def test_a_whole_or_longer_xstate_write_needs_no_shim(host_xstate):
    whole = boot.xstate_probe(host_xstate.size)
    assert (whole.ret, whole.kept) == (0, True)
    longer = boot.xstate_probe(max(host_xstate.size, boot.UML_XSTATE_BYTES))  # clamped by the host
    assert (longer.ret, longer.kept) == (0, True)
    assert boot.host_needs_xstate_shim() == (host_xstate.size > boot.UML_XSTATE_BYTES)


# ---- the committed result (clock-free) ---------------------------------------------------------


def _check_fingerprint(df: pd.DataFrame) -> None:
    """6.1 (UML) and the host differ in the fingerprint call only, each as its era says."""
    by = {w: g.set_index("case") for w, g in df.groupby("where")}
    assert set(by) == {"uml", "host"}
    for where, g in by.items():
        assert set(g.index) == set(CASES), where
    uml, host = by["uml"], by["host"]
    assert fpr.kernel_version(uml["release"].iloc[0]) == (6, 1)
    assert uml.at[FINGERPRINT, "result"] == "EFAULT"
    assert uml.at[FINGERPRINT, "errno"] == 14
    assert host.at[FINGERPRINT, "result"] == fpr.expected_fingerprint(host["release"].iloc[0])
    others = [c for c in CASES if c != FINGERPRINT]
    assert uml.loc[others, "result"].tolist() == host.loc[others, "result"].tolist()
    assert uml.at["readv1_two_pages", "result"] == "8192"
    assert uml.at["readv1_negative", "result"] == "EINVAL"


def test_committed_boot_shows_the_pre_6_4_fingerprint():
    df = boot.committed_boot()
    if df.empty:
        pytest.fail("data/results/kernel-uml-boot holds no run")
    _check_fingerprint(df)
    host_release = df[df["where"] == "host"]["release"].iloc[0]
    assert fpr.kernel_version(host_release) >= (6, 4)  # the side-by-side needs a new host


def test_labkit_model_predicts_both_real_kernels():
    """labkit's model of 6.3 gives every readv() outcome the real 6.1 kernel gave, and its 6.4
    model every outcome of the host's (committed run; read() is not modelled)."""
    df = boot.committed_boot()
    table = fpr.side_by_side(df, model=True).set_index("call")
    uml_col = next(c for c in table.columns if c.endswith("(UML)"))
    host_col = next(c for c in table.columns if c.endswith("(host)"))
    readv = [CASES[c] for c in CASES if c.startswith("readv")]
    assert table.loc[readv, "model 6.3"].tolist() == table.loc[readv, uml_col].tolist()
    assert table.loc[readv, "model 6.4"].tolist() == table.loc[readv, host_col].tolist()
    assert table.at[CASES["read_ssize_max"], "model 6.3"] == ""  # not modelled, not invented
    model = fpr.model_fingerprint("6.3")
    assert model.result(FINGERPRINT) == "EFAULT"
    assert fpr.model_fingerprint("6.4").result(FINGERPRINT) == "8192"


# ---- live boots ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plain_boot():
    return boot.boot_uml(timeout=120)


@needs_uml
def test_boot_shows_the_fingerprint_beside_the_host(plain_boot):
    host = boot.run_host()
    _check_fingerprint(pd.concat([plain_boot.frame(), host.frame()]))
    assert host.release == os.uname().release
    model = fpr.model_fingerprint("6.3")  # labkit's 6.3 predicts the booted 6.1, call by call
    assert {c: model.result(c) for c in model.cases} == {
        c: plain_boot.result(c) for c in model.cases
    }
    committed = boot.committed_boot()
    if not committed.empty:  # the same answers as the committed run
        uml_rows = committed[committed["where"] == "uml"]
        assert dict(zip(uml_rows["case"], uml_rows["result"], strict=True)) == {
            c: plain_boot.result(c) for c in CASES
        }


@needs_uml
def test_xstate_shim_rewrites_every_write_and_keeps_the_answers(plain_boot):
    shimmed = boot.boot_uml(timeout=120, shim="on")
    assert shimmed.xstate_shim
    rewrites = [ln for ln in shimmed.console.splitlines() if ln.startswith("labkit-xstate-shim:")]
    assert rewrites and all(ln.endswith(": 0") for ln in rewrites)
    # every write UML made was of its own XSAVE size, the constant the shim decision uses
    assert {ln.split()[2] for ln in rewrites} == {str(boot.UML_XSTATE_BYTES)}
    assert shimmed.cases == plain_boot.cases


@needs_uml
def test_a_boot_past_its_timeout_is_killed_with_its_process_group():
    with pytest.raises(BootTimeout, match="did not finish") as info:
        boot.boot_uml(timeout=0.3, shim="off")
    assert _live_members(info.value.pgid) == []


def _live_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are not zombies (SIGKILL is delivered asynchronously:
    a short grace, not a timing)."""
    for _ in range(50):
        live = []
        for stat_file in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat_file.read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                live.append(int(stat_file.parent.name))
        if not live:
            return []
        time.sleep(0.1)
    return live


# ---- the command ---------------------------------------------------------------------------------


def test_cli_prints_the_side_by_side_and_the_fingerprint(monkeypatch, capsys):
    from labkit.cli import main

    uml = fpr.parse(_output(dict(ALL_OK, readv1_ssize_max=(-1, 14))), "uml").frame()
    host = fpr.parse(_output(ALL_OK, release="6.18.1"), "host").frame()
    extra = {"uml_release": "6.1.176", "uml_boot_seconds": 2.0, "xstate_shim": False}
    seen = {}

    def fake_measure(*, timeout, shim):
        seen.update(timeout=timeout, shim=shim)
        return pd.concat([uml, host], ignore_index=True), extra

    monkeypatch.setattr(boot, "measure", fake_measure)
    assert main(["kernel", "boot", "--timeout", "30", "--xstate-shim", "on"]) == 0
    out = capsys.readouterr().out
    assert seen == {"timeout": 30.0, "shim": "on"}
    assert "6.1.176 (UML)" in out and "6.18.1 (host)" in out
    assert "fingerprint readv1_ssize_max: UML EFAULT, host 8192" in out


def test_cli_reports_a_missing_uml_with_the_apt_command(monkeypatch, capsys):
    from labkit.cli import main

    monkeypatch.setattr(boot, "uml_binary", lambda: None)
    assert main(["kernel", "boot"]) == 2
    assert "apt-get install -y user-mode-linux" in capsys.readouterr().err

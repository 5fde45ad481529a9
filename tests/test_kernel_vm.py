"""The kernel bench (labkit.kernelvm): its pieces without QEMU, then real boots (slow).

The boots build (or take from the cache, as ``.ci/run`` builds them in the background)
stock 6.1 and 6.1 with the change as merged into 6.4, boot each twice under QEMU TCG with
icount, and check what must hold whatever the figures: two boots of one kernel give the
same modal per-call count for every /dev/zero case, and ``readv(1)`` imports its iovec as
an ITER_IOVEC before the change and as an ITER_UBUF after it.  They skip, naming the
install command, where QEMU or the kernel source is missing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from labkit.kernelvm import attrib, build, eras, guest, matrix, qemu
from labkit.kernelvm.eras import ERAS, KernelVMError

ROOT = Path(__file__).resolve().parent.parent
GPL = ROOT / "kernel" / "gpl"

SAMPLE = """\
[    0.000000] Linux version 6.1.192
LABKIT-VM begin
LABKIT-VM uname 6.1.192
LABKIT-VM cpu 1 0 QEMU_TCG_CPU_version_2.5+
LABKIT-VM vuln spectre_v2 Vulnerable;_STIBP:_disabled
LABKIT-VM import IOVEC -1 14
LABKIT-VM row readv1 4096 1000 12 4842007 6 4842007 4842928 4842007
LABKIT-VM error open-dev-nullb0 2
LABKIT-VM end
reboot: Restarting system
"""


def test_parse_reads_rows_identity_and_errors():
    b = guest.parse(SAMPLE)
    assert b.ended
    assert b.identity["release"] == "6.1.192"
    assert b.identity["erms"] is True and b.identity["fsrm"] is False
    assert b.identity["readv1_import"] == "IOVEC"
    assert b.identity["vulnerabilities"]["spectre_v2"].startswith("Vulnerable; STIBP")
    (row,) = b.rows
    assert row["case"] == "readv1" and row["per_call"] == pytest.approx(4842.007)
    assert row["agree"] == 6 and row["median_total"] == 4842007
    assert b.errors == ["open-dev-nullb0 2"]


def test_parse_without_the_end_says_so():
    b = guest.parse(SAMPLE.replace("LABKIT-VM end\n", ""))
    assert not b.ended
    assert "unreadable" in guest.parse("LABKIT-VM row x 1\n").errors[0]


def test_the_initramfs_is_a_newc_archive_of_init(tmp_path):
    data = guest._cpio_newc({"init": (0o100755, b"\x7fELF-and-more")})
    assert data.startswith(b"070701") and len(data) % 4 == 0
    assert int(data[6 + 8 : 6 + 16], 16) == 0o100755  # mode
    assert int(data[6 + 6 * 8 : 6 + 7 * 8], 16) == len(b"\x7fELF-and-more")  # size
    assert b"init\0" in data and b"TRAILER!!!\0" in data
    if shutil.which("cpio"):
        out = subprocess.run(["cpio", "-t"], input=data, capture_output=True, check=True)
        assert out.stdout.split() == [b"init"]


def test_every_era_differs_from_stock_by_its_patches_only():
    assert ERAS["6.1"].patches == ()
    for name, era in ERAS.items():
        texts = eras.patch_texts(era)
        assert len(texts) == len(era.patches), name
        for _, text in texts:
            assert "+++ b/" in text
    assert "@seed" in ERAS["6.1+v1"].patches
    assert not any("0002" in p for p in ERAS["6.1+v1"].patches)  # the mail as mailed


def test_gpl_patches_carry_spdx_provenance_and_a_readme_row():
    readme = (GPL / "README.md").read_text()
    for era in ERAS.values():
        for name in era.patches:
            if name == "@seed":
                continue
            text = (GPL / name).read_text()
            assert text.startswith("SPDX-License-Identifier: GPL-2.0"), name
            assert f"`{name}`" in readme, name
    assert "3b2deb0e46da" in (GPL / ERAS["6.1+merged"].patches[-1]).read_text()
    assert "e03ad4ee2783" in (GPL / ERAS["6.1+merged"].patches[-2]).read_text()
    assert "bd11b3a391e3" in (GPL / ERAS["6.1-r1fix"].patches[0]).read_text()


def test_r3_patch_is_the_archived_one_line_hunk_restored():
    """Every changed line of the restored patch, with its sign, in order, is the archive's
    one-line text (whitespace aside)."""
    seed = " ".join(
        (ROOT / "data" / "seeds" / "2023-io_uring-readv-to-read.txt").read_text().split()
    )
    mine = (GPL / ERAS["6.1+r3"].patches[0]).read_text()
    changed = re.findall(r"(?m)^([+-])(?![+-]{2} )(.*)$", mine)
    assert len(changed) == 17
    flat = " ".join(f"{sign} {' '.join(text.split())}" for sign, text in changed)
    assert flat in seed
    assert "@@ -402,7 +402,22 @@" in seed and "@@ -377,7 +377,22 @@" in mine


def test_missing_qemu_names_the_install_command(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _t: None)
    why = eras.missing_tools()
    assert why is not None and "apt-get install -y qemu-system-x86" in why
    with pytest.raises(KernelVMError, match="apt-get install -y qemu-system-x86"):
        qemu.boot(Path("bz"), Path("rd"), "max", ["zero"])


def test_unknown_group_and_cpu_are_refused():
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip(f"kernel bench: {eras.missing_tools()}")
    with pytest.raises(ValueError, match="unknown guest group"):
        qemu.boot(Path("bz"), Path("rd"), "max", ["nope"])
    with pytest.raises(KeyError):
        qemu.qemu_command(Path("bz"), Path("rd"), "pentium", [])


def test_saving_table_marks_the_functions_of_ninety_percent():
    before = pd.Series({"a": 100.0, "b": 50.0, "c": 10.0, "d": 3.0, "[user]": 20.0})
    after = pd.Series({"a": 60.0, "b": 55.0, "c": 0.0, "d": 0.0, "new": 8.0, "[user]": 20.0})
    t = attrib.saving_table(before, after)
    assert t["saved"].sum() == pytest.approx(163 - 123)
    assert list(t.index[:2]) == ["a", "c"]
    top = t[t["top"]]
    assert abs(t["saved"].sum() - top["saved"].sum()) <= 0.1 * abs(t["saved"].sum())
    assert not t["top"].all()  # the tail is not marked
    assert "[user]" not in t.index  # no change, no row


def _boot_row(era, boot, case, per_call):
    return {"era": era, "config": "base", "cpu": "max", "boot": boot, "case": case,
            "bytes": 4096, "per_call": per_call, "agree": 12, "min_total": per_call * 1000,
            "median_total": per_call * 1000, "calls": 1000, "batches": 12}  # fmt: skip


def _two_state_rows(upper):
    """null_blk boots of three eras; ``upper(era, boot)``: whether the boot is 8 per call up
    (every null_blk case of the boot alike, /dev/zero's never)."""
    base = {"6.1": 3136.0, "6.1+v1": 3032.0, "6.1+merged": 3020.0}
    out = []
    for era, readv in base.items():
        for b in (1, 2, 3):
            up = 8.0 if upper(era, b) else 0.0
            out += [_boot_row(era, b, "nullb_read", 2839.0 + up),
                    _boot_row(era, b, "nullb_readv1", readv + up),
                    _boot_row(era, b, "readv1", 4842.0)]  # fmt: skip
    return pd.DataFrame(out)


@pytest.mark.parametrize(
    "upper",
    [
        lambda era, b: b == 3 and era == "6.1" or b != 2 and era == "6.1+v1",  # modal trap
        lambda era, b: era == "6.1+v1",  # every v1 boot up: the lowest boot is up too
        lambda era, b: b == 1,  # the same boot number up in every era
        lambda era, b: False,
    ],
)
def test_savings_align_each_boot_on_its_state(upper):
    rows = _two_state_rows(upper)
    aligned = matrix.align_states(rows)
    assert set(aligned.loc[aligned["case"] == "readv1", "state_shift"]) == {0.0}
    shifted = aligned[aligned["case"].str.startswith("nullb_")]
    assert set(shifted["state_shift"]) <= {0.0, 8.0}
    summary = matrix.summarize(rows)
    assert (summary["boots_agree"] == 3).all()  # aligned, every boot gives one count
    assert summary["boots_shifted"].sum() == 2 * sum(
        upper(e, b) for e in ("6.1", "6.1+v1", "6.1+merged") for b in (1, 2, 3)
    )
    saved = matrix.savings(summary).set_index(["era", "case"])["saved"]
    assert saved[("6.1+v1", "nullb_readv1")] == 104
    assert saved[("6.1+merged", "nullb_readv1")] == 116
    assert saved[("6.1+v1", "readv1")] == 0
    assert "nullb_read" not in {c for _, c in saved.index}  # the state's own case: not listed


def test_a_boot_without_the_state_case_is_left_as_measured():
    rows = pd.DataFrame([_boot_row("6.1", 1, "nullb_readv1", 3144.0)])
    aligned = matrix.align_states(rows)
    assert aligned["per_call"].iloc[0] == 3144.0 and aligned["state_shift"].isna().all()


def test_symbol_map_finds_the_function_of_an_address(tmp_path):
    m = tmp_path / "System.map"
    m.write_text(
        "ffffffff81000000 T _stext\nffffffff81000100 t helper\n"
        "ffffffff81000200 D some_data\nffffffff81000300 T other\n"
    )
    s = attrib.SymbolMap(m)
    assert s.function(0xFFFFFFFF81000150) == "helper"
    assert s.function(0xFFFFFFFF81000250) == "helper"  # data symbols do not end a function
    assert s.function(0x401000) == attrib.USER


def test_cli_refuses_zero_boots_in_one_line(capsys):
    from labkit.cli import main

    assert main(["kernel", "vm", "run", "--boots", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--boots" in err[0]


def test_the_wheel_ships_the_guest_and_the_configs():
    text = (ROOT / "pyproject.toml").read_text()
    assert "kernelvm/guest/*.c" in text and "kernelvm/config/*.config" in text
    assert guest.SOURCE.is_file() and (eras.CONFIG_DIR / "base.config").is_file()


# ---- real boots (slow) ----------------------------------------------------------------

MISSING = eras.missing_tools()
if MISSING is None and not Path("/usr/src/linux-source-6.1.tar.xz").is_file():
    MISSING = f"/usr/src/linux-source-6.1.tar.xz is missing: install with {eras.INSTALL_HINT}"
needs_bench = pytest.mark.skipif(MISSING is not None, reason=f"kernel bench: {MISSING}")


@pytest.fixture(scope="module")
def change_boots():
    """Stock 6.1 and 6.1 + the merged change, each booted twice (the /dev/zero groups)."""
    rows, identity = matrix.run_plan(matrix.CHANGE, boots=2)
    return rows, identity


@pytest.mark.slow
@needs_bench
def test_two_boots_give_the_same_per_call_counts(change_boots):
    rows, _ = change_boots
    summary = matrix.summarize(rows)
    assert set(summary["era"]) == {"6.1", "6.1+merged"}
    assert len(summary) >= 2 * 9  # getppid and the 8 /dev/zero cases per era
    disagree = summary[summary["boots_agree"] != summary["boots"]]
    assert disagree.empty, disagree.to_string()
    # every batch starts just after a tick and is shorter than a tick period: none holds one
    assert (summary["batches_agree_min"] == summary["batches"]).all(), summary.to_string()


@pytest.mark.slow
@needs_bench
def test_readv1_imports_iovec_before_the_change_and_ubuf_after(change_boots):
    _, identity = change_boots
    seen = {(b["era"], b["readv1_import"]) for b in identity["boots"]}
    assert seen == {("6.1", "IOVEC"), ("6.1+merged", "UBUF")}
    for k in identity["kernels"].values():
        assert k["release"].startswith("6.1.") and len(k["config_sha256"]) == 64


@pytest.mark.slow
@needs_bench
def test_a_damaged_build_is_one_line_naming_the_rebuild(change_boots, tmp_path):
    k = build.cached("6.1", "base")
    assert k is not None
    record = build.cached("6.1", "base").record
    assert record["era"] == "6.1"
    image = k.folder / "bzImage"
    data = image.read_bytes()
    try:
        image.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
        from labkit._store import StoreDamaged  # the store's own error

        with pytest.raises(StoreDamaged) as exc:
            build.cached("6.1", "base")
        assert "bzImage" in str(exc.value) and "labkit kernel vm build" in str(exc.value)
        assert "\n" not in str(exc.value)
    finally:
        image.write_bytes(data)
    assert build.cached("6.1", "base") is not None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-v"]))

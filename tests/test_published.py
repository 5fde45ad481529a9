"""The published figures match the seed mails (parsed here independently)."""

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from labkit import claims, config
from labkit.measure import ledgers
from labkit.results.r1 import seed as r1_seed
from labkit.results.r2 import seed as r2_seed
from labkit.results.r3 import seed as r3_seed

SEEDS = Path(__file__).resolve().parents[1] / "data" / "seeds"
needs_seeds = pytest.mark.skipif(not SEEDS.is_dir(), reason="seed mails not available")


def seed(name):
    return (SEEDS / name).read_text(errors="replace")


def test_every_row_has_a_source():
    df = pd.concat([ledgers.published(r) for r in ledgers.RESULTS], ignore_index=True)
    assert {"R1", "R2", "R3"} <= set(ledgers.RESULTS)  # a new result adds its own CSV
    assert set(df["result"]) == set(ledgers.RESULTS)
    for col in ledgers.SOURCE_COLUMNS:
        if col == "source_line":
            assert (df[col] >= 1).all(), col
        else:
            assert df[col].notna().all() and (df[col].astype(str).str.len() > 3).all(), col
    assert df["source_date"].str.match(r"^\d{4}-\d{2}-\d{2}$").all()


def _digits(value: str) -> str:
    """A number's significant digits: "0.85998" -> "85998", "72540000" -> "7254"."""
    return value.replace(".", "").lstrip("0").rstrip("0") if "." in value else value.rstrip("0")


@needs_seeds
def test_each_figure_is_written_where_its_row_says():
    for result in ledgers.RESULTS:
        df = ledgers.published(result)
        for r in df.itertuples():
            line = seed(r.source_file).split("\n")[int(r.source_line) - 1]
            # the words as written on that line (the seed's runs of spaces collapsed)
            assert r.source_text in " ".join(line.split()), (result, r.source_line, r.source_text)
            assert _digits(str(r.value)) in r.source_text.replace(".", ""), (result, r.value)


@needs_seeds
def test_r1_matches_seed():
    text = seed("2019-io_uring-fixed-buffer-seek.txt")
    found = re.findall(r"reading to the (start|end) of the buffer:\s+(\d+) ns", text)
    assert len(found) == 4
    expect = {
        ("before", "head"): int(found[0][1]),
        ("before", "tail"): int(found[1][1]),
        ("after", "head"): int(found[2][1]),
        ("after", "tail"): int(found[3][1]),
    }
    df = r1_seed.table()
    times = df[df["unit"] == "ns"]
    got = {(r.variant, r.position): r.ns_per_op for r in times.itertuples()}
    assert got == expect
    speedup = int(re.search(r"about an (\d+)x improvement", text).group(1))
    assert df.loc[df["quantity"] == "tail_speedup", "value"].tolist() == [speedup]
    assert "dont use iov_iter_advance() for fixed buffers" in df["source_subject"].iloc[0]
    assert re.search(r"^Subject: .*dont use iov_iter_advance", text, re.M)


@needs_seeds
def test_r2_matches_seed():
    text = seed("2023-iov_iter-ubuf-import-thread.txt")
    runs = re.findall(r"read-zero (\d)\n_+\nExecuted in\s+([\d.]+) (millis|secs)", text)
    assert len(runs) == 6
    secs = [(int(v), float(t) / (1000 if unit == "millis" else 1)) for v, t, unit in runs]
    df = r2_seed.table()
    got = [(0 if r.variant == "read" else 1, r.value) for r in df.itertuples()]
    assert [g[0] for g in got] == [s[0] for s in secs]
    assert [g[1] for g in got] == pytest.approx([s[1] for s in secs])
    assert list(df["kernel"]) == ["stock"] * 4 + ["patched"] * 2
    assert "10M 4k reads" in text
    assert set(df["calls"]) == {10_000_000} and set(df["bytes_per_call"]) == {4096}
    assert df["ns_per_call"].tolist() == pytest.approx([s * 100 for _, s in secs])
    usr_sys = re.findall(
        r"usr time\s+([\d.]+) (millis|secs).*\n"
        r"\s+sys time\s+([\d.]+) (millis|secs)",
        text,
    )

    def secs_of(v, unit):
        return float(v) / (1000 if unit == "millis" else 1)

    assert len(usr_sys) == 6
    assert df["usr_s"].tolist() == pytest.approx([secs_of(u, uu) for u, uu, _, _ in usr_sys])
    assert df["sys_s"].tolist() == pytest.approx([secs_of(s, su) for _, _, s, su in usr_sys])


@needs_seeds
def test_r3_matches_seed():
    text = seed("2023-io_uring-readv-to-read.txt")
    samples = re.findall(r"IOPS=([\d.]+)M, BW=([\d.]+)GiB/s, IOS/call=(\d+)/(\d+)", text)
    assert len(samples) == 16
    df = r3_seed.table()
    assert list(df["variant"]) == ["before"] * 8 + ["after"] * 8
    assert df["value"].tolist() == pytest.approx([float(s[0]) * 1e6 for s in samples])
    assert df["bw_gib_s"].tolist() == pytest.approx([float(s[1]) for s in samples])
    assert df["ios_per_call_done"].tolist() == [int(s[2]) for s in samples]
    assert df["ios_per_call_reaped"].tolist() == [int(s[3]) for s in samples]
    assert "24 drives" in text and set(df["drives"]) == {24}
    gain = df[df.variant == "after"]["value"].mean() / df[df.variant == "before"]["value"].mean()
    assert 1.05 < gain < 1.07  # "about +5.8%" in the design brief


def test_unknown_result():
    with pytest.raises(KeyError):
        ledgers.published("R9")


# ---- tolerance bands -------------------------------------------------------------------


def test_bands_parse_and_each_contains_its_claims_published_figure():
    import csv

    rows = []
    for path in ledgers.files("bands.csv"):
        with open(path, newline="") as f:
            rows += list(csv.DictReader(f))
    assert rows and set(rows[0]) == set(ledgers.BAND_COLUMNS)
    for r in rows:
        lo, hi = float(r["band_low"]), float(r["band_high"])
        assert lo < hi, r["claim"]
        assert len(r["reason"]) > 40 and r["source"], r["claim"]
        assert r["status"] in ledgers.BAND_STATUSES and r["declared"] and r["declared_in"]
        if r["status"] == "amended":  # an earlier band, kept as declared (test_declarations)
            continue
        c = claims.get(r["claim"])
        assert (c.result, c.unit) == (r["result"], r["unit"])
        if c.published is not None:
            fig = c.band().published
            assert lo <= fig <= hi, (r["claim"], lo, fig, hi)
            assert math.isfinite(lo) and math.isfinite(hi)
        elif math.isfinite(lo) and math.isfinite(hi):  # a claim of no change (tail = head)
            assert lo <= float(r["null"]) <= hi and "claim" in r["reason"], r["claim"]
        else:  # no published figure: the band is the claim's direction, one side open
            assert math.isinf(hi) or "direction" in r["reason"], r["claim"]
            assert "direction of the claim" in r["reason"]
    b = ledgers.bands()
    assert set(b["result"]) <= set(ledgers.RESULTS)
    assert {"R1", "R2", "R3"} <= set(b["result"])


def test_published_figures_recomputed_from_the_raw_tables():
    def pub(claim_id):
        return claims.get(claim_id).band().published

    r1 = ledgers.published("R1").set_index(["variant", "position"])["value"]
    assert pub("R1.tail_speedup") == pytest.approx(r1["before", "tail"] / r1["after", "tail"])
    assert pub("R1.ns_per_page") == pytest.approx(
        (r1["before", "tail"] - r1["after", "tail"]) / ((1 << 30) // 4096 - 1)
    )
    r2 = ledgers.published("R2")
    before = r2[(r2["variant"] == "readv1") & (r2["kernel"] == "stock")]["value"].mean()
    after = r2[(r2["variant"] == "readv1") & (r2["kernel"] == "patched")]["value"].mean()
    assert pub("R2.saved_share") == pytest.approx(100 * (before - after) / before)
    assert pub("R2.saved_ns") == pytest.approx((before - after) * 100)  # s over 10M calls -> ns
    r3 = ledgers.published("R3")
    gain = r3[r3.variant == "after"]["value"].mean() / r3[r3.variant == "before"]["value"].mean()
    assert pub("R3.ubuf_gain") == pytest.approx(100 * (gain - 1))
    # the R3 band is the extremes of any pairing of the published samples
    b = claims.get("R3.ubuf_gain").band()
    lo = r3[r3.variant == "after"]["value"].min() / r3[r3.variant == "before"]["value"].max()
    hi = r3[r3.variant == "after"]["value"].max() / r3[r3.variant == "before"]["value"].min()
    assert (b.low, b.high) == pytest.approx((100 * (lo - 1), 100 * (hi - 1)), abs=1e-3)


def test_bands_are_the_same_in_quick_and_full_mode(monkeypatch):
    monkeypatch.setenv("LABKIT_QUICK", "1")
    quick = ledgers.bands()
    monkeypatch.setenv("LABKIT_QUICK", "0")
    assert ledgers.bands().equals(quick)
    assert ledgers.claim_band("R1.no_such_claim") is None


# ---- the ledgers: one folder per result ------------------------------------------------


def test_each_result_folder_holds_its_own_ledgers():
    """Every result with published figures has its bands and evidence in its own folder, and
    each file holds only that result's rows (read through labkit.measure.ledgers)."""
    for kind in ("published.csv", "bands.csv", "evidence.csv"):
        found = ledgers.files(kind)
        assert [ledgers.result_of(p) for p in found] == list(ledgers.RESULTS), kind
        assert all(p.parent.parent == config.results_dir() for p in found)
    for kind in ("bands.csv", "setups.csv", "evidence.csv"):
        rows = ledgers.rows(kind, ("claim",))
        assert rows and all(r.fields["claim"].startswith(f"{ledgers.result_of(r.path)}.")
                            for r in rows)  # fmt: skip


def _ledger(root, result, kind, text):
    path = root / result / kind
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_bad_ledger_row_is_named_by_its_file(monkeypatch, tmp_path):
    header = ",".join(ledgers.BAND_COLUMNS) + "\n"
    row = "R2.x,R2,1,2,0,ns,why,src,2026-12-01,abc1234,{status},\n"
    monkeypatch.setattr(config, "results_dir", lambda: tmp_path)
    _ledger(tmp_path, "r1", "bands.csv", header)
    bad = _ledger(tmp_path, "r2", "bands.csv", header + row.format(status="in force"))
    assert ledgers.bands()["claim"].tolist() == ["R2.x"]
    bad.write_text(header + row.format(status="gone"))
    with pytest.raises(ValueError, match=f"{re.escape(str(bad))} line 2: status must be one of"):
        ledgers.bands()
    bad.write_text(header + row.format(status="in force") * 2)
    with pytest.raises(ValueError, match=f"duplicate claim ids .*{re.escape(str(bad))} line 3"):
        ledgers.bands()
    bad.write_text(header + row.format(status="in force").replace(",1,2,", ",one,2,"))
    with pytest.raises(
        ValueError, match=f"{re.escape(str(bad))} line 2: band_low, band_high, null must be"
    ):
        ledgers.bands()
    stray = _ledger(tmp_path, "r1", "bands.csv", header + row.format(status="in force"))
    bad.write_text(header)
    with pytest.raises(
        ValueError, match=f"{re.escape(str(stray))} line 2: a row of \\['R2'\\] in R1's"
    ):
        ledgers.bands()
    setup = _ledger(tmp_path, "r3", "setups.csv", "claim,aspect\nR3.x,size\n")
    with pytest.raises(ValueError, match=f"{re.escape(str(setup))}: no column"):
        ledgers.setups()

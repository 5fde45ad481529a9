"""Result bundles and the cross-host gallery: write, load, tamper, compare, findings, CLI."""

import json
import math

import pandas as pd
import pytest

from labkit.cli import main
from labkit.report import bundle, gallery

COLS = ["result", "quantity", "unit", "estimate", "ci_low", "ci_high", "band_low", "band_high"]


def _summary(rows):
    return pd.DataFrame(rows, columns=[*COLS, "verdict"])


def _env(model_name, family, model, tsa="Not affected"):
    host = {
        "vendor": "GenuineIntel" if "Xeon" in model_name else "AuthenticAMD",
        "family": family,
        "model": model,
        "stepping": 1,
        "model_name": model_name,
        "microcode": "0x1",
        "hypervisor": "KVM",
        "vulnerabilities": {"tsa": tsa},
    }
    return {
        "git_commit": "abc",
        "labkit_version": "0.1.0",
        "date": "2026-12-03T10:00:00+00:00",
        "quick_mode": False,
        "cpu_model": model_name,
        "mitigations": {"tsa": tsa},
        "host": host,
    }


def _two(tmp_path):
    share = ("R2", "time saved", "%")
    xeon = _summary(
        [
            (*share, 2.9, 2.5, 3.3, 2.5, 3.5, "reproduced"),
            ("R1", "ns per page", "ns", 5.0, 4.6, 5.5, 3.57, 4.39, "differs"),
            ("R3", "gain", "%", 19.0, 18.0, 20.0, 5.0, 6.8, "not comparable"),
        ]
    )
    epyc = _summary(
        [
            (*share, 1.3, 0.8, 1.9, 2.5, 3.5, "differs"),
            ("R1", "ns per page", "ns", 5.1, 4.7, 5.6, 3.57, 4.39, "differs"),
            ("R3", "gain", "%", 13.0, 11.0, 16.0, 5.0, 6.8, "not comparable"),
        ]
    )
    a = bundle.write(
        tmp_path / "a",
        summary=xeon,
        environment=_env("Intel Xeon", 6, 207),
        source="test",
        label="xeon",
    )
    b = bundle.write(
        tmp_path / "b",
        summary=epyc,
        environment=_env("AMD EPYC", 25, 1, "Vulnerable: No microcode"),
        source="test",
    )
    return a, b


def test_bundle_round_trip_and_tamper(tmp_path):
    a, _ = _two(tmp_path)
    b = bundle.load(a)
    assert b.label == "xeon" and b.fingerprint.startswith("Intel Xeon fam 6 model 207")
    assert b.manifest["format"] == bundle.FORMAT and b.manifest["sessions"] == 1
    assert len(b.summary) == 3
    with pytest.raises(FileExistsError):
        bundle.write(a, summary=b.summary, environment={}, source="x")
    (a / "summary.csv").write_text((a / "summary.csv").read_text().replace("2.9", "3.0"))
    with pytest.raises(bundle.BundleError, match="changed"):
        bundle.load(a)
    with pytest.raises(bundle.BundleError, match="not a labkit bundle"):
        bundle.load(tmp_path)


def test_samples_travel_gzipped(tmp_path):
    exp = tmp_path / "results" / "live-syscalls"
    exp.mkdir(parents=True)
    pd.DataFrame({"variant": ["a", "b"], "ns_per_op": [1.0, 2.0]}).to_csv(
        exp / "t.csv", index=False
    )
    (exp / "t.json").write_text(json.dumps({"env": {}}))
    out = bundle.write(
        tmp_path / "bd",
        summary=_summary([]),
        environment={},
        source="t",
        samples=[(exp / "t.csv", exp / "t.json")],
    )
    b = bundle.load(out)
    assert list(b.samples("live-syscalls")["ns_per_op"]) == [1.0, 2.0]
    with pytest.raises(KeyError):
        b.samples("nothing")


def test_compare_pools_and_states_findings(tmp_path):
    a, b = _two(tmp_path)
    c = gallery.compare([bundle.load(a), bundle.load(b)])
    t = c.table.set_index(["result", "quantity"])
    r2 = t.loc[("R2", "time saved")]
    assert r2["xeon: verdict"] == "reproduced"
    assert math.isfinite(r2["pooled"]) and r2["pooled_low"] < 1.3 and r2["pooled_high"] > 2.9
    r3 = t.loc[("R3", "gain")]
    assert r3["not_pooled"] == "not comparable on some host" and math.isnan(r3["pooled"])
    # the verdict that changes with the host is a finding naming what differs
    f = [x for x in c.findings if x.startswith("R2 time saved")]
    assert f and "the verdict changes with the host" in f[0]
    assert "family: 6 vs 25" in f[0] and "tsa:" in f[0]
    # the same verdict with overlapping intervals is no finding
    assert not [x for x in c.findings if x.startswith("R1 ns per page")]
    text = gallery.format_comparison(c)
    assert "findings (" in text and "pooled over hosts" in text
    assert "| R2 | time saved |" in gallery.format_comparison(c, markdown=True)
    fig = gallery.plot(c)
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 3
    with pytest.raises(ValueError):
        gallery.compare([bundle.load(a)])


def test_cli_compare(tmp_path, capsys):
    a, b = _two(tmp_path)
    assert main(["compare", str(a), str(b), "--csv", str(tmp_path / "c.csv")]) == 0
    assert "findings" in capsys.readouterr().out
    assert (tmp_path / "c.csv").is_file()
    assert main(["compare", str(a), str(tmp_path)]) == 2
    assert "not a labkit bundle" in capsys.readouterr().err


def test_gallery_holds_the_history():
    """data/gallery: the bundles built from git history load and name their hosts."""
    found = [bundle.load(p) for p in bundle.gallery_bundles()]
    labels = " | ".join(b.label for b in found)
    assert "Intel Xeon" in labels and "AMD EPYC" in labels
    for b in found:
        assert (
            b.manifest["source"].startswith("git history")
            or b.manifest["source"] == "labkit reproduce"
        )
        assert b.sample_files()


def test_from_reproduction_and_add_to_gallery(tmp_path):
    out = tmp_path / "out"
    (out / "results" / "x").mkdir(parents=True)
    _summary([("R2", "time saved", "%", 2.9, 2.5, 3.3, 2.5, 3.5, "reproduced")]).to_csv(
        out / "summary.csv", index=False
    )
    pd.DataFrame({"ns_per_op": [1.0]}).to_csv(out / "results" / "x" / "t.csv", index=False)
    p = bundle.from_reproduction(out)
    b = bundle.load(p)
    assert b.manifest["source"] == "labkit reproduce" and b.environment.get("host")
    assert bundle.from_reproduction(out) == p  # a rerun replaces it
    g = bundle.add_to_gallery(p, tmp_path / "gallery")
    assert bundle.load(g).summary.equals(b.summary)
    with pytest.raises(FileExistsError):
        bundle.add_to_gallery(p, tmp_path / "gallery")


def test_old_summaries_are_keyed_by_claim_and_judged_by_todays_bands():
    old = pd.DataFrame(
        [
            ("R1", "after the fix: tail / head", "x", 1.0, 0.99, 1.01, 0.1225, 0.1507, "differs"),
            ("R3", "io_uring READV(1) as UBUF: request-rate gain at peak", "%", 5.5, 5.2, 5.8,
             5.02, 6.8, "reproduced"),
        ],
        columns=[*COLS, "verdict"],
    )  # fmt: skip
    n = gallery.normalised(old).set_index("key")
    r1 = n.loc["R1.tail_over_head"]
    assert r1["recorded_verdict"] == "differs" and r1["verdict"] == "reproduced"  # tail = head
    assert n.loc["R3.ubuf_gain", "verdict"] == "not comparable"  # 24 drives vs /dev/zero

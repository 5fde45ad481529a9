"""Result bundles and the cross-host gallery: write, load, tamper, compare, findings, CLI."""

import json
import math
import re
import shutil

import pandas as pd
import pytest

from labkit.cli import main
from labkit.report import bundle, gallery

COLS = ["result", "quantity", "unit", "estimate", "ci_low", "ci_high", "band_low", "band_high"]


def _summary(rows):
    return pd.DataFrame(rows, columns=[*COLS, "verdict"])


def _env(model_name, family, model, tsa="Not affected", commit="abc", kernel="6.18.44"):
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
        "git_commit": commit,
        "git_dirty": False,
        "kernel_release": kernel,
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
        environment=_env("AMD EPYC", 25, 1, "Vulnerable: No microcode", kernel="6.18.45"),
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
    assert r2["xeon: verdict"] == "reproduced" and r2["kind"] == "timed"
    assert math.isfinite(r2["pooled"]) and r2["pooled_low"] < 1.3 and r2["pooled_high"] > 2.9
    assert r2["pooled_hosts"] == 2
    r3 = t.loc[("R3", "gain")]
    assert r3["not_pooled"] == "not comparable on some host" and math.isnan(r3["pooled"])
    # the verdict that changes with the host is a finding naming what differs
    f = [x for x in c.findings if x.startswith("R2: time saved")]
    assert f and "the verdict changes with the host" in f[0]
    # the CPU first, then the kernel; the vulnerabilities after
    assert "family: 6 vs 25" in f[0] and "kernel: 6.18.44 vs 6.18.45" in f[0]
    assert "Host 1 (reproduced) and host 2 (differs) differ in vendor: GenuineIntel vs" in f[0]
    assert f[0].index("family:") < f[0].index("kernel:") < f[0].index("mitigation state of tsa")
    assert "code:" not in f[0]  # the same code on both
    # the same verdict with overlapping intervals is no finding
    assert not [x for x in c.findings if x.startswith("R1: ns per page")]
    text = gallery.format_comparison(c)
    assert "findings (" in text and "over 2 hosts (random effects" in text
    assert "kernel 6.18.45; code abc" in text  # each host with its kernel and code
    md = gallery.format_comparison(c, markdown=True)
    assert "| R2: time saved | time saved | [2.5, 3.5] | reproduced: 2.9 [2.5, 3.3]%" in md
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
    assert "per README" not in labels and "not recorded" not in labels  # what was recorded
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


def test_summaries_are_judged_again_by_todays_bands():
    old = pd.DataFrame(
        [
            ("R1", "after the fix: tail / head", "x", 1.0, 0.99, 1.01, 0.1225, 0.1507, "differs",
             "R1.tail_over_head"),
            ("R3", "io_uring READV(1) as UBUF: request-rate gain at peak", "%", 5.5, 5.2, 5.8,
             5.02, 6.8, "reproduced", "R3.ubuf_gain"),
        ],
        columns=[*COLS, "verdict", "claim"],
    )  # fmt: skip
    n = gallery.normalised(old).set_index("key")
    r1 = n.loc["R1.tail_over_head"]
    assert (
        r1["recorded_verdict"] == "differs" and r1["verdict"] == "check passed"
    )  # by construction
    assert n.loc["R3.ubuf_gain", "verdict"] == "not comparable"  # 24 drives vs /dev/zero


def _counts(tmp_path, values, commits, labels=None):
    """Bundles of one clock-free count row (R2.instr_saved) and one timed row each."""
    out = []
    for k, (v, commit) in enumerate(zip(values, commits, strict=True)):
        label = (labels or {}).get(
            k, "model: instructions saved per readv(1) call, 6.3 -> 6.4 (callgrind)"
        )
        summary = pd.DataFrame(
            [
                ("R2.instr_saved", "R2", label, "instructions", v, v, v, 1.0, math.inf,
                 "reproduced", "callgrind instruction count (no clock: exact)"),
                ("R2.saved_ns", "R2", "readv(1) as UBUF: ns saved per call", "ns", 5.0 + k,
                 4.0 + k, 6.0 + k, 4.5875, 6.4225, "reproduced", "percentile bootstrap"),
            ],
            columns=["claim", *COLS, "verdict", "method"],
        )  # fmt: skip
        env = _env("AMD EPYC", 25, k + 1, commit=commit)
        out.append(
            bundle.load(
                bundle.write(tmp_path / f"b{k}", summary=summary, environment=env, source="t")
            )
        )
    return out


def test_counts_that_differ_are_a_code_change_not_pooled(tmp_path):
    bs = _counts(tmp_path, [92.0, 92.0, 60.0], ["aaaaaaa1", "aaaaaaa1", "bbbbbbb2"])
    c = gallery.compare(bs)
    t = c.table.set_index("claim")
    row = t.loc["R2.instr_saved"]
    assert row["kind"] == "count" and math.isnan(row.get("pooled", math.nan))
    assert "differs between code versions (aaaaaaa, bbbbbbb)" in row["not_pooled"]
    f = [x for x in c.findings if x.startswith("R2.instr_saved")]
    assert len(f) == 1 and "the code changed between these versions" in f[0]
    assert "92 (code aaaaaaa on" in f[0] and "60 (code bbbbbbb on" in f[0]
    # timed rows still pool, over 3 hosts
    assert t.loc["R2.saved_ns", "pooled_hosts"] == 3
    # count rows come after the timed rows of their result, and carry their code version
    assert list(c.table["claim"]) == ["R2.saved_ns", "R2.instr_saved"]
    assert "(code bbbbbbb)" in gallery.format_comparison(c)


def test_equal_counts_are_no_finding_and_not_pooled(tmp_path):
    c = gallery.compare(_counts(tmp_path, [48.0, 48.0], ["aaaaaaa1", "bbbbbbb2"]))
    row = c.table.set_index("claim").loc["R2.instr_saved"]
    assert "48 on every host" in row["not_pooled"] and math.isnan(row.get("pooled", math.nan))
    assert not [x for x in c.findings if x.startswith("R2.instr_saved")]


def test_counts_that_differ_on_the_same_code_are_said_so(tmp_path):
    c = gallery.compare(_counts(tmp_path, [48.0, 47.0], ["aaaaaaa1", "aaaaaaa1"]))
    f = [x for x in c.findings if x.startswith("R2.instr_saved")]
    assert len(f) == 1 and "same code" in f[0]


def test_rows_of_different_quantities_under_one_id_are_not_pooled(tmp_path):
    other = {1: "model: instructions saved per readv(1) call, something else (callgrind)"}
    c = gallery.compare(_counts(tmp_path, [92.0, 92.0], ["a", "a"], labels=other))
    row = c.table.set_index("claim").loc["R2.instr_saved"]
    assert row["not_pooled"] == "the hosts' rows measure different quantities under this id"
    f = [x for x in c.findings if x.startswith("R2.instr_saved")]
    assert len(f) == 1 and "something else" in f[0] and "not compared" in f[0]


def test_a_row_without_a_claim_is_kept_by_its_label_and_not_judged():
    old = pd.DataFrame(
        [("R1", "after the fix: tail / head", "x", 1.0, 0.99, 1.01, 0.9, 1.1, "reproduced")],
        columns=[*COLS, "verdict"],
    )
    n = gallery.normalised(old).set_index("key")
    row = n.loc["R1: after the fix: tail / head"]
    assert row["measures"] == "after the fix: tail / head" and row["verdict"] == "reproduced"


def test_short_titles_wrap_at_words_and_log_axes():
    from labkit.report import gallery as gp

    q = (
        "published after-fix tail / head (1,377 / 10,135 ns) against the live "
        "READ_FIXED tail / head"
    )
    title = gp.short_title("R1.published_tail_over_head", q)
    lines = title.split("\n")
    assert lines[0] == "R1.published_tail_over_head" and len(lines) <= 1 + gp.TITLE_LINES
    assert all(len(x) <= gp.TITLE_WIDTH + 4 for x in lines[1:])
    words = set(q.split())
    assert all(w in words for x in lines[1:] for w in x.replace(" ...", "").split())
    t = gp.short_title("R2.instr_saved", "model: instructions saved per call (callgrind)")
    assert t == "R2.instr_saved [model]\ninstructions saved per call"
    assert gp.use_log([1.0, 100.0]) and not gp.use_log([1.0, 10.0])
    assert not gp.use_log([-1.0, 100.0])


def test_plot_is_readable(tmp_path):
    """Titles whole, x labels with units, the legend above the panels, counts without
    intervals, a pooled interval wider than the axis said in the panel."""
    from labkit.report import gallery as gp

    bs = _counts(tmp_path, [92.0, 60.0], ["aaaaaaa1", "bbbbbbb2"])
    c = gallery.compare(bs)
    fig = gallery.plot(c)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 2
    by_title = {ax.get_title(loc="left").split("\n")[0]: ax for ax in axes}
    timed, count = by_title["R2.saved_ns"], by_title["R2.instr_saved [model]"]
    assert timed.get_xlabel() == gp.UNIT_LABELS["ns"]
    assert count.get_xlabel() == gp.UNIT_LABELS["instructions"]
    assert not count.containers  # no error bars on a count
    texts = " ".join(t.get_text() for t in count.texts)
    assert "code aaaaaaa" in texts and "code changed, not pooled" in texts
    assert "band: at least 1" in texts
    # two hosts: the pooled interval (t with 1 df) is wider than the axis, and says so
    wide = " ".join(t.get_text() for t in timed.texts)
    lo, hi = timed.get_xlim()
    row = c.table.set_index("claim").loc["R2.saved_ns"]
    if row["pooled_low"] < lo or row["pooled_high"] > hi:
        assert "pooled interval wider than the axis" in wide
    assert "2 hosts" in wide
    fig.canvas.draw()
    legend_bottom = fig.legends[0].get_window_extent().y0
    assert all(ax.get_tightbbox().y1 <= legend_bottom + 1 for ax in axes)


def test_rows_with_different_definitions_are_not_pooled(tmp_path):
    """A summary that names each row's definition (raw or corrected): not pooled across."""
    bs = []
    for k, definition in enumerate(["raw", "corrected for the proxy", None]):
        summary = _summary(
            [("R2", "time saved", "%", 2.0 + k, 1.5 + k, 2.5 + k, 2.5, 3.5, "inconclusive")]
        )
        if definition:
            summary["definition"] = definition
        env = _env("AMD EPYC", 25, k + 1)
        bs.append(bundle.load(bundle.write(tmp_path / f"d{k}", summary=summary, environment=env,
                                           source="t")))  # fmt: skip
    c = gallery.compare(bs)
    row = c.table.set_index("claim").loc["R2: time saved"]
    assert row["not_pooled"] == "the hosts' rows measure different quantities under this id"
    f = [x for x in c.findings if x.startswith("R2: time saved")]
    assert f and "[corrected for the proxy]" in f[0] and "[definition not recorded]" in f[0]
    # one definition beside a summary that names none pools (unknown is not different)
    c = gallery.compare([bs[0], bs[2]])
    assert c.table.set_index("claim").loc["R2: time saved", "pooled_hosts"] == 2


def test_the_gallery_shows_this_reproduction_in_its_hosts_place(tmp_path, monkeypatch):
    """Inside a reproduction (LABKIT_OUT), the gallery shows that run's bundle instead of
    an older one of the same host, beside the other hosts; an older run's does not win."""
    rows = _summary([("R2", "time saved", "%", 2.9, 2.5, 3.3, 2.5, 3.5, "reproduced")])
    gallery, out = tmp_path / "gallery", tmp_path / "out"
    old = _env("AMD EPYC", 25, 1)
    new = old | {"date": "2026-12-04T10:00:00+00:00"}
    bundle.write(gallery / "epyc", summary=rows, environment=old, source="t")
    bundle.write(gallery / "xeon", summary=rows, environment=_env("Intel Xeon", 6, 207), source="t")
    mine = bundle.write(out / "bundle", summary=rows, environment=new, source="t")
    monkeypatch.delenv("LABKIT_OUT", raising=False)
    assert len(bundle.gallery_with_this_run(gallery)) == 2  # no reproduction: the gallery
    shown = bundle.gallery_with_this_run(gallery, out)
    assert sorted(b.path.name for b in shown) == ["bundle", "xeon"]
    monkeypatch.setenv("LABKIT_OUT", str(out))
    assert [b.path for b in bundle.gallery_with_this_run(gallery)][-1] == mine
    # a reproduction older than the gallery's bundle of its host: the gallery's stays
    shutil.rmtree(out / "bundle")
    bundle.write(out / "bundle", summary=rows, environment=old | {"date": "2026-12-01"}, source="t")
    assert sorted(b.path.name for b in bundle.gallery_with_this_run(gallery, out)) == [
        "epyc",
        "xeon",
    ]


def test_a_reproductions_bundle_carries_only_its_own_samples(tmp_path):
    """The output folder keeps every earlier run's result files; the bundle takes those
    saved while this reproduction ran (its measuring phase and its notebooks)."""
    out = tmp_path / "out"
    (out / ".state").mkdir(parents=True)
    _summary([("R2", "time saved", "%", 2.9, 2.5, 3.3, 2.5, 3.5, "reproduced")]).to_csv(
        out / "summary.csv", index=False
    )
    (out / ".state" / "01-a.json").write_text(
        json.dumps(
            {"started": "2026-12-03T16:18:00+00:00", "finished": "2026-12-03T16:19:00+00:00"}
        )
    )
    (out / "measured").mkdir()
    (out / "measured" / "index.json").write_text(json.dumps({"sessions": ["01-20261203T161400Z"]}))
    for stamp in ("20261203T101010Z", "20261203T161500Z", "20261203T161859Z", "20261203T170000Z"):
        (out / "results" / "x").mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"ns_per_op": [1.0]}).to_csv(out / "results" / "x" / f"{stamp}-vm.csv")
    b = bundle.load(bundle.from_reproduction(out))
    assert sorted(p.name[:16] for p in b.sample_files() if p.name.endswith(".csv.gz")) == [
        "20261203T161500Z",
        "20261203T161859Z",
    ]


def test_rows_of_another_estimator_are_shown_apart_never_pooled_or_relabelled():
    from labkit.report import estimators

    found = [bundle.load(p) for p in bundle.gallery_bundles()]
    c = gallery.compare(found)
    share = c.table.set_index("claim").loc["R2.saved_share"]
    ids = {lab: share[f"{lab}: estimator"] for lab in c.labels}
    assert {"runs/uncorrected@99%", "sessions/proxy-corrected@95%"} <= set(ids.values())
    kept = [lab for lab, i in ids.items() if i == "sessions/proxy-corrected@95%"]
    pooled = share.get("pooled", math.nan)
    if len(kept) < 2:
        assert not math.isfinite(pooled)  # no two of one estimator
    else:  # pooled from the rows of that estimator only
        figures = [share[f"{lab}: estimate"] for lab in kept]
        assert min(figures) <= pooled <= max(figures), (pooled, figures)
    assert (
        "estimator runs/uncorrected@99% (the raw proxy, and its samples have no" in share["apart"]
    )
    md = gallery.format_comparison(c, markdown=True)  # the names as code: never an e-mail link
    assert "`runs/uncorrected@99%`" in md and "`sessions/proxy-corrected@95%`" in md
    assert not re.search(r"[^`\w/-][\w/-]+@[\d.]+%", md)
    xeon = next(b for b in found if "Xeon" in b.label)
    row = xeon.summary[xeon.summary["quantity"] == "readv(1) as UBUF: time saved per call"]
    r = dict(row.iloc[0], claim="R2.saved_share")
    assert estimators.estimate_of(r).confidence == 0.99  # as recorded, not 0.95
    assert estimators.lacks_correction(xeon)
    same = [
        ("a", dict(r), None),
        ("b", dict(r), None),
        ("c", dict(r, reason="the 95% interval"), None),
    ]
    keep, apart = estimators.one_estimator(same)
    assert [x[0] for x in keep] == ["a", "b"] and [x[0] for x in apart] == ["c"]

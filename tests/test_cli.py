"""The labkit command line: info and bench copy in quick mode."""

import json

import pandas as pd
import pytest

from labkit import cli
from labkit.measure import results


def test_info_prints_record_and_io_uring(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "kernel_release" in out and "mitigations:" in out
    assert "io_uring: available" in out or "io_uring: NOT available" in out


def test_info_json(capsys):
    assert cli.main(["info", "--json", "--quick"]) == 0
    env = json.loads(capsys.readouterr().out)
    assert env["quick_mode"] is True and "io_uring" in env


def test_bench_copy_quick_writes_results(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_DATA", str(tmp_path))
    monkeypatch.setenv("LABKIT_QUICK", "1")
    assert cli.main(["bench", "copy", "--repeats", "2", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "quick mode" in out and "% of memcpy bandwidth" in out
    assert "per segment" in out and "empty operation" in out
    paths = results.runs("core-copy", tmp_path)
    assert len(paths) == 1 and paths[0].with_suffix(".json").exists()
    df, env = results.load_run(paths[0])
    assert env["quick_mode"] is True
    assert {
        "memcpy",
        "copy_to_iter UBUF",
        "copy_to_iter IOVEC",
        "copy_from_iter BVEC",
        "advance KVEC",
        "advance BVEC",
        "empty",
        "clock",
    } <= set(df["variant"])
    assert (df.groupby(["size", "variant"]).size() == 2).all()
    assert set(df["size"]) >= {4096, 1 << 20, 1 << 30}
    assert isinstance(results.load("core-copy"), pd.DataFrame)


def test_bench_no_save(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_DATA", str(tmp_path))
    assert (
        cli.main(["bench", "copy", "--quick", "--repeats", "1", "--no-save", "--no-progress"]) == 0
    )
    assert results.runs("core-copy", tmp_path) == []


def test_demo_lists_all_seven_iterator_types(capsys):
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    for kind in ("UBUF", "IOVEC", "KVEC", "BVEC", "DISCARD", "XARRAY", "FOLIOQ"):
        assert f"  {kind:<7} -> 5000: IovIter({kind}, ITER_DEST, count=3192" in out, kind


def test_version(capsys):
    import labkit

    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"labkit {labkit.__version__}"


@pytest.mark.parametrize("argv", [["--help"], ["reproduce", "--help"], ["notebooks", "--help"]])
def test_help_is_plain_text_with_a_description(argv, capsys):
    with pytest.raises(SystemExit):
        cli.main(argv)
    text = capsys.readouterr().out
    assert "``" not in text and ":func:" not in text and ":mod:" not in text
    usage, _, rest = text.partition("\n\n")
    assert usage.startswith("usage: labkit")
    assert not rest.startswith(("positional", "options")), "no description"
    if argv[0] == "reproduce":
        assert "exit status:" in text and "130 interrupted" in text


def test_notebooks_copies_and_refuses_to_overwrite(tmp_path, capsys):
    from labkit.run.reproduce import find_notebooks, notebooks_dir

    dest = tmp_path / "mine"
    assert cli.main(["notebooks", str(dest)]) == 0
    names = sorted(p.name for p in dest.iterdir())
    assert names == [p.name for p in find_notebooks(notebooks_dir())]
    assert f"jupyter lab {dest}" in capsys.readouterr().out
    (dest / names[0]).write_text("my edits")
    assert cli.main(["notebooks", str(dest)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (dest / names[0]).read_text() == "my edits"
    assert cli.main(["notebooks", str(dest), "--force"]) == 0
    assert (dest / names[0]).read_text() != "my edits"
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert cli.main(["notebooks", str(afile)]) == 2
    assert "not a directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [["compare", "--bogus"], ["kernel", "diff", "--bogus"], ["info", "--bogus"], ["demo", "-x"]],
)
def test_a_bad_option_prints_the_subcommands_own_usage(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    name = "labkit " + " ".join(a for a in argv if not a.startswith("-"))
    assert err.startswith(f"usage: {name} "), err
    assert f"{name}: error: unrecognized arguments: {argv[-1]}" in err


@pytest.mark.parametrize("action", ["build", "diff", "counts"])
def test_kernel_actions_take_src_and_name_a_bad_tree(action, tmp_path, capsys, monkeypatch):
    """--src is an option of every action that builds (the README names it); a folder that
    is not a kernel tree is one line naming it, before anything is built."""
    # --src is handed on as the process's LABKIT_KERNEL_SRC: undone after this test, so the
    # later tests of this worker build Debian's trees, not this folder
    monkeypatch.setenv("LABKIT_KERNEL_SRC", str(tmp_path))
    monkeypatch.delenv("LABKIT_KERNEL_SRC")
    assert cli.main(["kernel", action, "--src", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "not a kernel tree" in err and len(err.splitlines()) == 1


def test_demo_prints_plain_numbers(capsys):
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "np." not in out
    assert "bytes at addr+0: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]" in out


def test_bench_help_names_where_results_go(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "labkit-results/results/" in text and "data/results" not in text

"""The environment record."""

import json

from labkit.measure import envinfo


def test_record_has_every_key_and_is_json():
    env = envinfo.environment(quick=True)
    assert tuple(env) == envinfo.KEYS
    assert env["quick_mode"] is True
    assert envinfo.environment(quick=False)["quick_mode"] is False
    assert isinstance(env["cpu_count"], int) and env["cpu_count"] >= 1
    assert env["kernel_release"] and env["python"].count(".") == 2
    assert "-O2" in env["cflags"] or "-O1" in env["cflags"]
    assert set(env["packages"]) >= {"numpy", "pandas", "cffi"}
    assert set(env["io_uring"]) == {"available", "errno", "reason", "sysctl_disabled"}
    assert isinstance(env["io_uring"]["available"], bool)
    assert json.loads(json.dumps(env)) == env


def test_mitigations_read_each_file(tmp_path):
    (tmp_path / "spectre_v2").write_text("Mitigation: Retpolines\n")
    (tmp_path / "meltdown").write_text("Not affected\n")
    assert envinfo.mitigations(tmp_path) == {
        "meltdown": "Not affected",
        "spectre_v2": "Mitigation: Retpolines",
    }
    assert envinfo.mitigations(tmp_path / "absent") == {}


def test_cpu_model_parses_cpuinfo(tmp_path):
    p = tmp_path / "cpuinfo"
    p.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Test CPU 9000\n")
    assert envinfo.cpu_model(p) == "Test CPU 9000"


def test_io_uring_status_consistent():
    """One vocabulary: the record's "available" is the probe's."""
    from labkit import live

    st = envinfo.io_uring_status()
    assert st["available"] == live.probe()["available"]
    assert not (st["available"] and st["errno"] is not None)


def test_format_environment_lists_sections():
    text = envinfo.format_environment(envinfo.environment())
    assert "kernel_release" in text and "mitigations:" in text and "io_uring:" in text

"""What tells hosts apart: the host record, its fingerprint and the differences of two."""

import json

from labkit.measure import envinfo, host

AMD = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
microcode\t: 0x1000065
siblings\t: 2
cpu cores\t: 2
flags\t\t: fpu sse hypervisor avx2

processor\t: 1
vendor_id\t: SomethingElse
"""


def _fake_sys(tmp_path, clocks="tsc kvm-clock", current="kvm-clock"):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(AMD)
    sys_cpu = tmp_path / "cpu"
    (sys_cpu / "vulnerabilities").mkdir(parents=True)
    (sys_cpu / "vulnerabilities" / "tsa").write_text("Vulnerable: No microcode\n")
    (sys_cpu / "smt").mkdir()
    (sys_cpu / "smt" / "active").write_text("0\n")
    (sys_cpu / "smt" / "control").write_text("notsupported\n")
    cs = tmp_path / "clocksource0"
    cs.mkdir()
    (cs / "available_clocksource").write_text(clocks + " \n")
    (cs / "current_clocksource").write_text(current + "\n")
    cmd = tmp_path / "cmdline"
    cmd.write_text("mitigations=auto quiet -- --init-arg secret-ish\n")
    return host.host_record(cpuinfo, sys_cpu, cs, cmd)


def test_record_from_files(tmp_path):
    h = _fake_sys(tmp_path)
    assert tuple(h) == host.HOST_KEYS
    assert (h["vendor"], h["family"], h["model"], h["stepping"]) == ("AuthenticAMD", 25, 1, 1)
    assert h["microcode"] == "0x1000065" and h["hypervisor"] == "KVM"
    assert h["cmdline"] == "mitigations=auto quiet"  # init's arguments are not the kernel's
    assert h["smt"]["active"] is False and h["smt"]["siblings"] == 2
    assert h["vulnerabilities"] == {"tsa": "Vulnerable: No microcode"}
    assert h["cpufreq"] is None and h["clocksource"] == "kvm-clock"
    assert json.loads(json.dumps(h)) == h
    assert host.fingerprint(h) == "AMD EPYC fam 25 model 1 stepping 1, KVM, ucode 0x1000065"


def test_hypervisor_evidence():
    assert host.hypervisor(set(), ["tsc"]) == (None, "no hypervisor flag in /proc/cpuinfo")
    assert host.hypervisor({"hypervisor"}, ["tsc"])[0] == "unknown"
    assert host.hypervisor({"hypervisor"}, ["tsc", "hyperv_clocksource_tsc_page"])[0] == "Hyper-V"
    assert host.hypervisor(set(), [], "xen")[0] == "Xen"


def test_unreadable_files_give_none(tmp_path):
    h = host.host_record(tmp_path / "no", tmp_path / "no", tmp_path / "no", tmp_path / "no")
    assert h["family"] is None and h["cmdline"] is None and h["vulnerabilities"] == {}
    assert host.fingerprint(h).startswith("unknown CPU")
    assert host.fingerprint(None) == "host not recorded"


def test_old_records_and_differences(tmp_path):
    old = envinfo.host_of({"cpu_model": "Intel(R) Xeon(R) Processor", "mitigations": {"tsa": "x"}})
    assert host.fingerprint(old) == "Intel(R) Xeon(R) Processor (model not recorded)"
    new = _fake_sys(tmp_path)
    diff = host.differences(old, new)
    assert "model_name: Intel(R) Xeon(R) Processor vs AMD EPYC" in diff
    assert any(d.startswith("family: not recorded vs 25") for d in diff)
    assert any(d.startswith("tsa:") for d in diff)
    assert host.differences(new, new) == []


def test_environment_carries_the_host():
    env = envinfo.environment(quick=True)
    assert env["host"]["vulnerabilities"] == env["mitigations"]
    assert env["host_fingerprint"] == host.fingerprint(env["host"])

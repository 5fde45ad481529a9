"""What tells one host from another: the CPU's identity, the hypervisor, mitigations, clocks.

The same kernel and the same code gave different verdicts on three 2-vCPU KVM
guests (an Intel Xeon model 207, an AMD EPYC family 26, an Intel Xeon model 167),
and a record that said only "AMD EPYC" could not tell them apart.  :func:`host_record`
reads what separates hosts, from files any user may read:

* the CPU's vendor, family, model, stepping, model name and microcode
  (``/proc/cpuinfo``), whether the CPU runs under a hypervisor (the cpuid
  ``hypervisor`` flag) and which one where Linux shows it (the paravirtual
  clock sources ``kvm-clock``, ``hyperv_clocksource_tsc_page``, ``xen``; Xen's
  ``/sys/hypervisor/type``);
* the state of every file of ``/sys/devices/system/cpu/vulnerabilities``;
* the kernel command line (``/proc/cmdline``, up to a ``--``: what follows is
  the init process's, not the kernel's);
* SMT (``/sys/devices/system/cpu/smt``), the clock source in use and those
  available, the cpufreq driver and governor and the cpuidle driver where
  the guest sees them.

:func:`fingerprint` condenses a record into the one line every verdict's scope
names: ``"AMD EPYC fam 25 model 1 stepping 1, KVM, ucode 0x1000065"``.
Everything is JSON-serialisable; a file that cannot be read gives None, never
an exception.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CPUINFO = Path("/proc/cpuinfo")
CMDLINE = Path("/proc/cmdline")
SYS_CPU = Path("/sys/devices/system/cpu")
CLOCKSOURCE = Path("/sys/devices/system/clocksource/clocksource0")
XEN_TYPE = Path("/sys/hypervisor/type")

#: Paravirtual clock sources and the hypervisor each belongs to.
PV_CLOCKS = {
    "kvm-clock": "KVM",
    "hyperv_clocksource_tsc_page": "Hyper-V",
    "hyperv_clocksource_msr": "Hyper-V",
    "xen": "Xen",
    "vmware-tsc": "VMware",  # not a clocksource name on every kernel; harmless when absent
}

#: Keys of :func:`host_record`.
HOST_KEYS = (
    "vendor",
    "family",
    "model",
    "stepping",
    "model_name",
    "microcode",
    "hypervisor",
    "hypervisor_evidence",
    "vulnerabilities",
    "cmdline",
    "smt",
    "clocksource",
    "clocksources_available",
    "cpufreq",
    "cpuidle_driver",
    "logical_cpus",
)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def cpuinfo_fields(cpuinfo: Path = CPUINFO) -> dict[str, str]:
    """The ``key: value`` pairs of the first processor of ``/proc/cpuinfo`` ({} if unreadable)."""
    text = _read(cpuinfo)
    out: dict[str, str] = {}
    if not text:
        return out
    for line in text.splitlines():
        if not line.strip():
            if out:
                break  # the first processor's block is enough: the CPUs of a guest are alike
            continue
        key, sep, value = line.partition(":")
        if sep:
            out.setdefault(key.strip(), value.strip())
    return out


def _int(v: str | None) -> int | None:
    try:
        return int(v, 0) if v is not None else None
    except ValueError:
        return None


def hypervisor(
    flags: set[str], clocksources: list[str], xen_type: str | None = None
) -> tuple[str | None, str]:
    """(hypervisor name or None, the evidence) from cpuid flags and the clock sources.

    None with "no hypervisor flag" on bare metal; "unknown" when the cpuid
    ``hypervisor`` flag is set but nothing names the hypervisor.
    """
    for clock in clocksources:
        if clock in PV_CLOCKS:
            return PV_CLOCKS[clock], f"paravirtual clock source {clock!r}"
    if xen_type:
        return xen_type.capitalize(), f"/sys/hypervisor/type is {xen_type!r}"
    if "hypervisor" in flags:
        return "unknown", "cpuid hypervisor flag set, no paravirtual clock names it"
    return None, "no hypervisor flag in /proc/cpuinfo"


def vulnerabilities(vuln_dir: Path = SYS_CPU / "vulnerabilities") -> dict[str, str]:
    """Each file of ``/sys/devices/system/cpu/vulnerabilities`` and its one-line state."""
    out: dict[str, str] = {}
    try:
        entries = sorted(vuln_dir.iterdir())
    except OSError:
        return out
    for p in entries:
        out[p.name] = _read(p) or "unreadable"
    return out


def kernel_cmdline(path: Path = CMDLINE) -> str | None:
    """The kernel's command line, without what follows ``--`` (the init process's arguments)."""
    text = _read(path)
    if text is None:
        return None
    words = text.split()
    return " ".join(words[: words.index("--")] if "--" in words else words)


def cpufreq(sys_cpu: Path = SYS_CPU) -> dict[str, Any] | None:
    """Driver, governor and limits of CPU 0's frequency scaling (None: the guest has none)."""
    d = sys_cpu / "cpu0" / "cpufreq"
    if not d.is_dir():
        return None
    keys = ("scaling_driver", "scaling_governor", "scaling_min_freq", "scaling_max_freq")
    keys += ("cpuinfo_min_freq", "cpuinfo_max_freq")
    return {k: _read(d / k) for k in keys}


def host_record(
    cpuinfo: Path = CPUINFO,
    sys_cpu: Path = SYS_CPU,
    clocksource: Path = CLOCKSOURCE,
    cmdline: Path = CMDLINE,
) -> dict[str, Any]:
    """What separates this host from others (keys :data:`HOST_KEYS`; see the module)."""
    info = cpuinfo_fields(cpuinfo)
    flags = set(info.get("flags", "").split())
    available = (_read(clocksource / "available_clocksource") or "").split()
    name, evidence = hypervisor(flags, available, _read(XEN_TYPE))
    smt_active = _read(sys_cpu / "smt" / "active")
    record = {
        "vendor": info.get("vendor_id") or info.get("CPU implementer"),
        "family": _int(info.get("cpu family")),
        "model": _int(info.get("model")),
        "stepping": _int(info.get("stepping")),
        "model_name": info.get("model name"),
        "microcode": info.get("microcode"),
        "hypervisor": name,
        "hypervisor_evidence": evidence,
        "vulnerabilities": vulnerabilities(sys_cpu / "vulnerabilities"),
        "cmdline": kernel_cmdline(cmdline),
        "smt": {
            "control": _read(sys_cpu / "smt" / "control"),
            "active": None if smt_active is None else smt_active == "1",
            "siblings": _int(info.get("siblings")),
            "cores": _int(info.get("cpu cores")),
        },
        "clocksource": _read(clocksource / "current_clocksource"),
        "clocksources_available": available,
        "cpufreq": cpufreq(sys_cpu),
        "cpuidle_driver": _read(sys_cpu / "cpuidle" / "current_driver"),
        "logical_cpus": _read(sys_cpu / "online"),
    }
    assert tuple(record) == HOST_KEYS
    return record


_VENDORS = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel"}


def fingerprint(host: dict[str, Any] | None) -> str:
    """One line naming the host: model name, family/model/stepping, hypervisor, microcode.

    ``"AMD EPYC fam 25 model 1 stepping 1, KVM, ucode 0x1000065"``.  For a record
    without the host fields (results from before they were recorded), what
    there is: ``"Intel(R) Xeon(R) Processor (model not recorded)"``.
    """
    if not host:
        return "host not recorded"
    name = host.get("model_name") or _VENDORS.get(host.get("vendor") or "", host.get("vendor"))
    name = name or "unknown CPU"
    fms = [
        f"{label} {host[key]}"
        for label, key in (("fam", "family"), ("model", "model"), ("stepping", "stepping"))
        if host.get(key) is not None
    ]
    text = f"{name} {' '.join(fms)}" if fms else f"{name} (model not recorded)"
    hv = host.get("hypervisor")
    if hv:
        text += f", {hv}" if hv != "unknown" else ", a hypervisor"
    elif "hypervisor" in host:
        text += ", bare metal"
    if host.get("microcode"):
        text += f", ucode {host['microcode']}"
    return text


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two host records, as short phrases (e.g. for a gallery finding).

    Compares the CPU identity, hypervisor, microcode, SMT, clock source, cpufreq and
    cpuidle drivers, the kernel command line and each vulnerability's state;
    fields missing from either record are named as "not recorded".
    """
    out: list[str] = []
    for key in ("vendor", "family", "model", "stepping", "model_name", "microcode", "hypervisor"):
        va, vb = a.get(key), b.get(key)
        if va is None or vb is None:
            if va != vb:
                out.append(
                    f"{key}: {va if va is not None else 'not recorded'} vs "
                    f"{vb if vb is not None else 'not recorded'}"
                )
        elif va != vb:
            out.append(f"{key}: {va} vs {vb}")
    for key in ("clocksource", "cpuidle_driver", "cmdline"):
        if key in a and key in b and a[key] != b[key]:
            out.append(f"{key}: {a[key]} vs {b[key]}")
    sa, sb = a.get("smt") or {}, b.get("smt") or {}
    if sa.get("active") != sb.get("active") and "smt" in a and "smt" in b:
        out.append(f"SMT active: {sa.get('active')} vs {sb.get('active')}")
    fa, fb = a.get("cpufreq"), b.get("cpufreq")
    if "cpufreq" in a and "cpufreq" in b and fa != fb:
        out.append(f"cpufreq: {fa} vs {fb}")
    va, vb = a.get("vulnerabilities") or {}, b.get("vulnerabilities") or {}
    for name in sorted(set(va) | set(vb)):
        if va.get(name) != vb.get(name):
            out.append(f"{name}: {va.get(name, 'not listed')!r} vs {vb.get(name, 'not listed')!r}")
    return out


__all__ = [
    "differences",
    "fingerprint",
    "host_record",
]

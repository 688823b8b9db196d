# RSS that NVML adds to a process, by init flags (0, NO_GPUS=1, NO_ATTACH=2), each in a fresh
# interpreter; then a device query, as the agent's collector makes.
import ctypes, subprocess, sys
def rss():
    f = dict(l.split(":", 1) for l in open("/proc/self/status"))
    return " ".join(f"{k} {f[k].strip()}" for k in ("VmRSS", "RssAnon", "RssFile"))
if len(sys.argv) > 1:
    flags = int(sys.argv[1])
    print(f"flags {flags}: before {rss()}")
    nv = ctypes.CDLL("libnvidia-ml.so.1")
    rc = nv.nvmlInitWithFlags(flags)
    cuda = "libcuda" in open("/proc/self/maps").read()
    print(f"flags {flags}: init rc {rc}, libcuda {cuda}: {rss()}")
    h = ctypes.c_void_p(); u = ctypes.c_uint()
    rc1 = nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)); rc2 = nv.nvmlDeviceGetPowerUsage(h, ctypes.byref(u))
    cuda = "libcuda" in open("/proc/self/maps").read()
    print(f"flags {flags}: handle rc {rc1}, power rc {rc2} ({u.value} mW), libcuda {cuda}: {rss()}")
else:
    for flags in (0, 1, 2):
        subprocess.run([sys.executable, __file__, str(flags)])

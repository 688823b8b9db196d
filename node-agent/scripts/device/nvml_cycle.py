# What NVML costs a process over its life: RSS and CPU time of nvmlInit, of a device query,
# of nvmlShutdown (is libcuda unmapped, is the memory returned?), of malloc_trim, and of
# repeated init/query/shutdown cycles (as a collector that opens NVML per interval would do).
import ctypes, time
libc = ctypes.CDLL("libc.so.6")
def status():
    f = dict(l.split(":", 1) for l in open("/proc/self/status"))
    return " ".join(f"{k} {f[k].strip()}" for k in ("VmRSS", "RssAnon", "RssFile", "Threads"))
def libcuda():
    return "libcuda" in open("/proc/self/maps").read()
def big_anon(limit=4):
    rows, cur = [], None
    for line in open("/proc/self/smaps"):
        parts = line.split()
        if "-" in parts[0] and len(parts) >= 5 and ":" not in parts[0]:
            cur = [parts[0], parts[5] if len(parts) > 5 else "[anon]", 0]
            rows.append(cur)
        elif parts[0] == "Rss:" and cur is not None:
            cur[2] = int(parts[1])
    anon = sorted((r for r in rows if r[1] == "[anon]"), key=lambda r: -r[2])[:limit]
    return ", ".join(f"{r[2]} kB @{r[0]}" for r in anon)
def timed(label, fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    print(f"{label}: rc {out}, cpu {1e3*(time.process_time()-c0):.1f} ms, wall {1e3*(time.perf_counter()-w0):.1f} ms, libcuda {libcuda()}: {status()}")
nv = ctypes.CDLL("libnvidia-ml.so.1")
print(f"start: {status()}")
h = ctypes.c_void_p(); u = ctypes.c_uint()
def query():
    return (nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)), nv.nvmlDeviceGetPowerUsage(h, ctypes.byref(u)), u.value)
timed("init", nv.nvmlInit_v2)
print(f"  largest anon mappings: {big_anon()}")
timed("query", query)
timed("malloc_trim", lambda: libc.malloc_trim(0))
timed("shutdown", nv.nvmlShutdown)
timed("malloc_trim", lambda: libc.malloc_trim(0))
print(f"  largest anon mappings: {big_anon()}")
for i in range(5):
    timed(f"cycle {i} init", nv.nvmlInit_v2)
    timed(f"cycle {i} query", query)
    timed(f"cycle {i} shutdown", nv.nvmlShutdown)

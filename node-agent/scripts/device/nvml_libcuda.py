# Which NVML call makes libnvidia-ml load libcuda into the caller? Calls each function the
# agent uses, in the agent's order, and reports the first one after which libcuda is mapped.
import ctypes, sys
nv = ctypes.CDLL("libnvidia-ml.so.1")
def mapped():
    return "libcuda" in open("/proc/self/maps").read()
buf = lambda: ctypes.create_string_buffer(4096)
h = ctypes.c_void_p()
u = ctypes.c_uint(); i1 = ctypes.c_int(); i2 = ctypes.c_int(); ull = ctypes.c_ulonglong()
es = ctypes.c_void_p()
calls = [
    ("nvmlInit_v2", lambda: nv.nvmlInit_v2()),
    ("nvmlDeviceGetCount_v2", lambda: nv.nvmlDeviceGetCount_v2(ctypes.byref(u))),
    ("nvmlSystemGetDriverVersion", lambda: nv.nvmlSystemGetDriverVersion(buf(), 80)),
    ("nvmlDeviceGetHandleByIndex_v2", lambda: nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))),
    ("nvmlDeviceGetName", lambda: nv.nvmlDeviceGetName(h, buf(), 96)),
    ("nvmlDeviceGetUUID", lambda: nv.nvmlDeviceGetUUID(h, buf(), 96)),
    ("nvmlDeviceGetPciInfo_v3", lambda: nv.nvmlDeviceGetPciInfo_v3(h, buf())),
    ("nvmlDeviceGetMemoryInfo", lambda: nv.nvmlDeviceGetMemoryInfo(h, buf())),
    ("nvmlDeviceGetCudaComputeCapability", lambda: nv.nvmlDeviceGetCudaComputeCapability(h, ctypes.byref(i1), ctypes.byref(i2))),
    ("nvmlSystemGetConfComputeCapabilities", lambda: nv.nvmlSystemGetConfComputeCapabilities(buf())),
    ("nvmlSystemGetConfComputeState", lambda: nv.nvmlSystemGetConfComputeState(buf())),
    ("nvmlSystemGetConfComputeGpusReadyState", lambda: nv.nvmlSystemGetConfComputeGpusReadyState(ctypes.byref(u))),
    ("nvmlDeviceGetEccMode", lambda: nv.nvmlDeviceGetEccMode(h, ctypes.byref(i1), ctypes.byref(i2))),
    ("nvmlDeviceGetPowerUsage", lambda: nv.nvmlDeviceGetPowerUsage(h, ctypes.byref(u))),
    ("nvmlDeviceGetTotalEnergyConsumption", lambda: nv.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(ull))),
    ("nvmlDeviceGetTemperature", lambda: nv.nvmlDeviceGetTemperature(h, 0, ctypes.byref(u))),
    ("nvmlDeviceGetUtilizationRates", lambda: nv.nvmlDeviceGetUtilizationRates(h, buf())),
    ("nvmlDeviceGetClockInfo", lambda: nv.nvmlDeviceGetClockInfo(h, 1, ctypes.byref(u))),
    ("nvmlDeviceGetCurrentClocksEventReasons", lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h, ctypes.byref(ull))),
    ("nvmlDeviceGetTotalEccErrors", lambda: nv.nvmlDeviceGetTotalEccErrors(h, 0, 1, ctypes.byref(ull))),
    ("nvmlEventSetCreate", lambda: nv.nvmlEventSetCreate(ctypes.byref(es))),
    ("nvmlDeviceRegisterEvents", lambda: nv.nvmlDeviceRegisterEvents(h, ctypes.c_ulonglong(8), es)),
    ("nvmlSystemGetCudaDriverVersion", lambda: nv.nvmlSystemGetCudaDriverVersion(ctypes.byref(i1))),
]
print("before init: libcuda mapped =", mapped())
for name, call in calls:
    try:
        rc = call()
    except AttributeError as e:
        print(f"{name}: not exported ({e})"); continue
    print(f"{name}: rc {rc}, libcuda mapped = {mapped()}")

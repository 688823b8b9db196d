#!/usr/bin/env python3
"""Compiles rns_exp.cu's device part with NVRTC here (no nvcc on the build machine):
catches compile errors before device time is spent, and writes the cubin for nvdisasm.
Usage: LD_LIBRARY_PATH=<nvrtc wheel lib> nvrtc_check.py ARCH OUT.cubin"""
import ctypes, os, sys

here = os.path.dirname(os.path.abspath(__file__))
kernels = os.path.normpath(os.path.join(here, "../../../../kernels"))
nv = ctypes.CDLL("libnvrtc.so.13")
src = open(os.path.join(here, "rns_exp.cu"), "rb").read()
prog = ctypes.c_void_p()
assert nv.nvrtcCreateProgram(ctypes.byref(prog), src, b"rns_exp.cu", 0, None, None) == 0
opts = [f"--gpu-architecture={sys.argv[1]}", f"--include-path={kernels}", f"--include-path={here}",
        "--std=c++17", "-default-device"]
opts = [o.encode() for o in opts]
rc = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
size = ctypes.c_size_t()
nv.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
nv.nvrtcGetProgramLog(prog, log)
print(log.value.decode())
if rc != 0:
    sys.exit(f"NVRTC error {rc}")
nv.nvrtcGetCUBINSize(prog, ctypes.byref(size))
cubin = ctypes.create_string_buffer(size.value)
nv.nvrtcGetCUBIN(prog, cubin)
open(sys.argv[2], "wb").write(cubin.raw[:size.value])
print(f"ok: {size.value} bytes")

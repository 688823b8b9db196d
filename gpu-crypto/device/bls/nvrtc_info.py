#!/usr/bin/env python3
"""Compiles a kernels/ program with NVRTC (the nvidia-cuda-nvrtc wheel, no GPU needed) for
the given architectures and prints ptxas's register / spill / stack report and the time.
Usage: nvrtc_info.py ops/bls_verify.cu sm_90 sm_120   (LD_LIBRARY_PATH must hold libnvrtc)."""
import ctypes, os, sys, time

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
kernels = os.path.join(root, "kernels")
nv = ctypes.CDLL("libnvrtc.so.13")
headers = []
for d, _, files in os.walk(kernels):
    for f in files:
        if f.endswith(".cuh"):
            p = os.path.join(d, f)
            headers.append((os.path.relpath(p, kernels), open(p, "rb").read()))
prog_name = sys.argv[1]
src = open(os.path.join(kernels, prog_name), "rb").read()
for arch in sys.argv[2:]:
    prog = ctypes.c_void_p()
    n = len(headers)
    texts = (ctypes.c_char_p * n)(*[h[1] for h in headers])
    names = (ctypes.c_char_p * n)(*[h[0].encode() for h in headers])
    assert nv.nvrtcCreateProgram(ctypes.byref(prog), src, prog_name.encode(), n, texts, names) == 0
    opts = [f"--gpu-architecture={arch}".encode(), b"-std=c++17", b"--ptxas-options=-v"]
    t = time.time()
    rc = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nv.nvrtcGetProgramLog(prog, log)
    print(f"== {prog_name} {arch}: rc={rc} {time.time() - t:.1f} s")
    print(log.value.decode(errors="replace"))

#!/usr/bin/env python3
"""Fills a kernel cache directory (gpu-crypto/engine/src/cuda/kernel_cache.rs's format and key)
with cubins compiled here by NVRTC (the nvidia-cuda-nvrtc wheel), so the device run loads
them instead of spending device time compiling. A wrong guess (other driver version,
cubin rejected) only means the device compiles as usual.
Usage: prebuild_cache.py OUT_DIR ARCH DRIVER_VERSION   (e.g. .device-bls/kernels sm_90 13000)"""
import ctypes, hashlib, os, re, struct, sys

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sources_rs = open(os.path.join(root, "gpu-crypto/engine/src/cuda/sources.rs")).read()
compile_rs = open(os.path.join(root, "gpu-crypto/engine/src/cuda/compile.rs")).read()
inc = lambda p: open(os.path.normpath(os.path.join(root, "gpu-crypto/engine/src/cuda", p)), "rb").read()

headers_block = sources_rs[sources_rs.index("pub const HEADERS"):sources_rs.index("];")]
headers = [(n, inc(p)) for n, p in re.findall(r'\(\s*"([^"]+)",\s*include_str!\("([^"]+)"\),?\s*\)', headers_block)]
programs = {}
for const, name, path in re.findall(
        r'pub const (\w+): KernelProgram = KernelProgram \{\s*name: "([^"]+)",\s*source: include_str!\("([^"]+)"\)',
        sources_rs):
    programs[const] = (name, inc(path))
order = re.search(r"pub const PROGRAMS: &\[KernelProgram\] = &\[([^\]]*)\]", sources_rs).group(1)
program_list = [programs[c.strip()] for c in order.split(",") if c.strip()]
options = re.search(r'pub const COMPILE_OPTIONS: &\[&str\] = &\[([^\]]*)\]', compile_rs).group(1)
options = re.findall(r'"([^"]+)"', options)

out_dir, arch, driver = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(out_dir, exist_ok=True)
nv = ctypes.CDLL("libnvrtc.so.13")

def field(h, b):
    h.update(struct.pack("<Q", len(b)))
    h.update(b)

for name, src in program_list:
    h = hashlib.sha256()
    field(h, name.encode()); field(h, src)
    for hn, ht in headers:
        field(h, hn.encode()); field(h, ht)
    for o in options:
        field(h, o.encode())
    field(h, arch.encode()); field(h, struct.pack("<i", driver))
    key = h.hexdigest()
    prog = ctypes.c_void_p()
    n = len(headers)
    texts = (ctypes.c_char_p * n)(*[t for _, t in headers])
    names = (ctypes.c_char_p * n)(*[hn.encode() for hn, _ in headers])
    assert nv.nvrtcCreateProgram(ctypes.byref(prog), src, name.encode(), n, texts, names) == 0
    opts = [f"--gpu-architecture={arch}".encode()] + [o.encode() for o in options]
    rc = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    assert rc == 0, f"{name}: NVRTC error {rc}"
    size = ctypes.c_size_t()
    nv.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    cubin = ctypes.create_string_buffer(size.value)
    nv.nvrtcGetCUBIN(prog, cubin)
    cubin = cubin.raw[:size.value]
    stem = name.replace("/", "_").replace(".", "_")
    with open(os.path.join(out_dir, f"{stem}-{key}.cubin"), "wb") as f:
        f.write(b"gpu-crypto-cubin" + hashlib.sha256(cubin).digest() + cubin)
    print(f"{name}: {len(cubin)} bytes, key {key[:16]}")

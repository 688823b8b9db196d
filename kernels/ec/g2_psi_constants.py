#!/usr/bin/env python3
"""Derives the constants of ec/g2_subgroup.cuh's untwist-Frobenius-twist endomorphism psi
from their definitions and prints them as Montgomery limbs (R = 2^384, 12 little-endian
32-bit limbs), or with --check compares them with the header.

psi(x, y) = (conj(x) PSI_X, conj(y) PSI_Y) on E'(Fp2): y^2 = x^3 + 4(u + 1), with
PSI_X = (u + 1)^-((p-1)/3) and PSI_Y = (u + 1)^-((p-1)/2) in Fp2 = Fp[u]/(u^2 + 1).
"""
import os
import re
import sys

P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
R = 1 << 384


def mul(a, b):
    return ((a[0] * b[0] - a[1] * b[1]) % P, (a[0] * b[1] + a[1] * b[0]) % P)


def power(a, e):
    r = (1, 0)
    while e:
        if e & 1:
            r = mul(r, a)
        a = mul(a, a)
        e >>= 1
    return r


def inverse(a):
    norm_inv = pow((a[0] * a[0] + a[1] * a[1]) % P, P - 2, P)
    return (a[0] * norm_inv % P, (P - a[1]) * norm_inv % P)


def limbs(v):
    m = v * R % P
    return [(m >> (32 * i)) & 0xFFFFFFFF for i in range(12)]


def tables():
    psi_x = inverse(power((1, 1), (P - 1) // 3))
    psi_y = inverse(power((1, 1), (P - 1) // 2))
    assert psi_x[0] == 0, "PSI_X is expected in u alone"
    return {
        "G2_PSI_X_C1": limbs(psi_x[1]),
        "G2_PSI_Y_C0": limbs(psi_y[0]),
        "G2_PSI_Y_C1": limbs(psi_y[1]),
    }


def render(name, values):
    words = ", ".join(f"0x{v:08x}u" for v in values)
    return f"__device__ __constant__ u32 {name}[FP_LIMBS] = {{{words}}};"


def main():
    t = tables()
    if sys.argv[1:] == ["--check"]:
        header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "g2_subgroup.cuh")
        src = open(header).read()
        for name, values in t.items():
            m = re.search(name + r"\[FP_LIMBS\]\s*=\s*\{([^}]*)\}", src)
            assert m, f"{name} not found in {header}"
            got = [int(w.strip().rstrip("u"), 16) for w in m.group(1).split(",") if w.strip()]
            assert got == values, f"{name} differs from its definition"
        print("g2 psi constants: ok")
    else:
        for name, values in t.items():
            print(render(name, values))


if __name__ == "__main__":
    main()

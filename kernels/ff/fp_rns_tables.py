#!/usr/bin/env python3
"""Constant tables of kernels/ff/fp_rns.cuh (BLS12-381 Fp in a residue number system, one
element per warp), and a lane-by-lane model of its product that checks every bound the
kernel relies on. Writes kernels/ff/fp_rns_tables.cuh; `--check` compares instead of
writing (CI runs it through gpu-crypto's kernel_tables test).

One element is 28 residues, one per lane, modulo 28 primes just below 2^30: base B (lanes
0-13, primes = 3 mod 4) and base B' (lanes 14-27). Values are Montgomery residues for
M = prod(B) ~ 2^420. A product is one modular multiplication per lane, then two base
extensions, each one broadcast of 14 residues and a 15-term dot product per lane:
  - each lane keeps its residue times a lane constant ("lane form"). B lane i keeps
    x sigma_i with sigma_i^2 = e_i k_i (k_i = -p^-1 (M/m_i)^-1, e_i = +-1, whichever is a
    square: m_i = 3 mod 4 makes one of them one), so x' y' = e_i xi_i, the residue the
    extension needs, up to a sign that B' lanes' constants absorb. B' lane j keeps x s_j
    with s_j = (M'/m'_j)^-1, so the first extension's output is the second's input.
  - B -> B' takes no quotient estimate: q^ = sum xi_i M/m_i is q + a M with 0 <= a <= 14,
    a valid Montgomery quotient; outputs stay below t/M + 15p. M/p ~ 2^39, so t/M < 0.41p
    for inputs below 2^19 p (outputs below 16p), and sums of a few products need no
    reduction.
  - B' -> B is exact: Kawamura's estimate with offset 1/2 (Kawamura, Koike, Sano and
    Shimbo, Eurocrypt 2000), as the value is far below M'/2.
Measured figures and the alternatives: docs/benchmarks.md and kernels/README.md.
"""
import random
import sys

import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fp_rns_tables.cuh")
P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
N = 14                   # moduli per base
W = 30                   # bits per modulus
TOP = 8                  # bits of each xi' kept for the second extension's quotient estimate
MASK64 = (1 << 64) - 1
OUT_BOUND = 15           # outputs below (OUT_BOUND + tiny) p


def is_prime(n):
    if n < 2:
        return False
    for q in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % q == 0:
            return n == q
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def moduli():
    base, base2, c = [], [], 1
    while len(base) < N or len(base2) < N:
        m = (1 << W) - c
        if is_prime(m):
            if m % 4 == 3 and len(base) < N:
                base.append(m)
            elif len(base2) < N:
                base2.append(m)
        c += 2
    return base, base2


BASE, BASE2 = moduli()
MODS = BASE + BASE2
M = 1
for m in BASE:
    M *= m
M2 = 1
for m in BASE2:
    M2 *= m
C_MAX = max((1 << W) - m for m in MODS)
assert C_MAX < 1 << 11, C_MAX
assert M > (1 << 38) * P and M2 > (1 << 38) * P


def sqrt_mod(a, m):
    assert m % 4 == 3
    r = pow(a, (m + 1) // 4, m)
    return r if r * r % m == a % m else None


def beta():
    text = open(os.path.join(HERE, "bls12_381_params.cuh")).read()
    block = text[text.index("FP_BETA[FP_LIMBS] = {"):]
    words = [int(w, 16) for w in block[block.index("{") + 1:block.index("}")].replace("u", "").split(",")]
    mont = sum(w << (32 * i) for i, w in enumerate(words))
    b = mont * pow(1 << 384, -1, P) % P
    assert b != 1 and pow(b, 3, P) == 1
    return b


def lane_constants():
    """Per lane: m, c, lane form factor f (x is kept as x f), and the two dot-product rows.
    B lane i:  row = second-extension weights (M'/m'_j) f_i, k2 = -M' f_i (times alpha').
    B' lane j: row = first-extension weights e_i p m_i^-1 f_j, k1 = f_j^-1 M^-1 (own v'),
               k0 = sum over e_i = -1 of m_i p m_i^-1 f_j (the sign fix of xi_i = m_i - v_i)."""
    lanes, signs = [], []
    for i, m in enumerate(BASE):
        k = (-pow(P, -1, m) * pow(M // m, -1, m)) % m
        s = sqrt_mod(k, m)
        e = 1
        if s is None:
            s, e = sqrt_mod(-k % m, m), -1
        assert s is not None and s * s % m == (e * k) % m
        signs.append(e)
        lanes.append(dict(m=m, f=s, k1=0, k0=0, k2=(-M2 * s) % m,
                          row=[(M2 // mj) * s % m for mj in BASE2]))
    for j, m in enumerate(BASE2):
        f = pow(M2 // m, -1, m)
        row = [(signs[i] * P * pow(mi, -1, m) * f) % m for i, mi in enumerate(BASE)]
        k0 = sum(mi * P * pow(mi, -1, m) * f for i, mi in enumerate(BASE) if signs[i] < 0) % m
        lanes.append(dict(m=m, f=f, k1=pow(f, -1, m) * pow(M, -1, m) % m, k0=k0, k2=0, row=row))
    for L in lanes:
        L["c"] = (1 << W) - L["m"]
        L["zero"] = pow(P * L["f"], -1, L["m"])
    return lanes, signs


LANES, SIGNS = lane_constants()


def reduce64(v, lane):
    """v < 2^64 -> v mod m for m = 2^30 - c: two folds of the bits above 30, one subtract."""
    m, c = lane["m"], lane["c"]
    assert 0 <= v <= MASK64
    h, lo = v >> W, v & ((1 << W) - 1)   # h < 2^34
    v = h * c + lo                       # < 2^45 + 2^30
    h, lo = v >> W, v & ((1 << W) - 1)   # h < 2^15 + 1
    v = h * c + lo                       # < 2^26 + 2^30 < 2m
    assert v < 2 * m
    return v - m if v >= m else v


def mulmod(a, b, lane):
    assert a < lane["m"] and b < lane["m"]
    return reduce64(a * b, lane)


def mont_mul(x, y):
    """x, y: 2N residues in lane form. Returns the lane form of x y / M mod p (not reduced)."""
    v = [mulmod(x[l], y[l], LANES[l]) for l in range(2 * N)]
    bcast = v[:N]                                   # broadcast 1: B lanes' v_i
    out = [0] * (2 * N)
    for l in range(N, 2 * N):
        L = LANES[l]
        acc = v[l] * L["k1"] + sum(a * w for a, w in zip(bcast, L["row"])) + L["k0"]
        assert acc <= MASK64, "B' sum overflows"
        out[l] = reduce64(acc, L)                   # xi'_j = r_j s_j: already lane form
    bcast2 = out[N:]                                # broadcast 2
    k = (sum(a >> (W - TOP) for a in bcast2) + (1 << (TOP - 1))) >> TOP
    for l in range(N):
        L = LANES[l]
        acc = sum(a * w for a, w in zip(bcast2, L["row"])) + k * L["k2"]
        assert acc <= MASK64, "B sum overflows"
        out[l] = reduce64(acc, L)
    return out


def to_lanes(v):
    return [v % L["m"] * L["f"] % L["m"] for L in LANES]


def from_lanes(r):
    """The integer the lanes hold (CRT over both bases, for checking only)."""
    plain = [r[l] * pow(L["f"], -1, L["m"]) % L["m"] for l, L in enumerate(LANES)]
    MM = M * M2
    v = 0
    for l, m in enumerate(MODS):
        mi = MM // m
        v += plain[l] * mi * pow(mi, -1, m)
    return v % MM


def check_product(a, b, bound_in):
    r = mont_mul(to_lanes(a), to_lanes(b))
    v = from_lanes(r)
    assert (v * M - a * b) % P == 0, "not a Montgomery product"
    assert v < a * b / M + OUT_BOUND * P, "output above the bound"
    return v


def main():
    check = "--check" in sys.argv
    rng = random.Random(1)
    # The exact extension's margin: outputs far below M'/2.
    assert (1 << 19) * P < M2 * (0.5 - N * (2 ** -TOP + C_MAX / 2 ** W))
    for bound_in in (1, 15, 300, 1 << 12):
        top = int(bound_in * P)
        edges = [0, 1, 2, P - 1, P, P + 1, top - 1, top - 2]
        vals = edges + [rng.randrange(top) for _ in range(100)]
        for a in vals:
            for b in (edges + [rng.randrange(top) for _ in range(2)]) if a in edges else [rng.randrange(top)]:
                check_product(a, b, bound_in)
        x = to_lanes(rng.randrange(top))
        for _ in range(50):
            x = mont_mul(x, x)
            assert from_lanes(x) < (OUT_BOUND + 0.01) * P
    # Residues that make some v_i = 0 (xi_i = m_i, not 0): products of multiples of m_i.
    for i in range(N):
        check_product(BASE[i] * rng.randrange(P // BASE[i]), rng.randrange(P), 1)
    # The zero test: x = k p (k < 2^20) iff every lane's x / (p f) is the same k.
    for k in (0, 1, 7, (1 << 20) - 1):
        lanes = to_lanes(k * P)
        assert all(v * L["zero"] % L["m"] == k for v, L in zip(lanes, LANES))
    text = tables()
    if check:
        if open(OUT).read() != text:
            sys.exit(f"{OUT} is not what {os.path.basename(__file__)} generates")
    else:
        with open(OUT, "w") as f:
            f.write(text)
    print("ok")


def tables():
    rows = []

    def arr(name, vals, comment, per_lane=True):
        # Per-lane tables are read with a different address on each lane: global memory
        # (one cached load) rather than __constant__ (one load per distinct address).
        space = "__device__ const" if per_lane else "__device__ __constant__"
        rows.append(f"// {comment}")
        rows.append(f"{space} u32 {name}[{len(vals)}] = {{")
        for k in range(0, len(vals), 6):
            rows.append("    " + ", ".join(f"0x{v:08x}u" for v in vals[k:k + 6]) + ",")
        rows.append("};")
    arr("RNS_M", [L["m"] for L in LANES], "m_l = 2^30 - c_l (lanes 0-13: base B, 14-27: B')")
    arr("RNS_C", [L["c"] for L in LANES], "c_l")
    arr("RNS_F", [L["f"] for L in LANES], "lane form factor f_l: a lane keeps x f_l mod m_l")
    arr("RNS_K0", [L["k0"] for L in LANES], "B': the sign fix of the first extension (B: 0)")
    arr("RNS_K1", [L["k1"] for L in LANES], "B': weight of the lane's own product (B: 0)")
    arr("RNS_K2", [L["k2"] for L in LANES], "B: -M' f_i, times the second extension's quotient (B': 0)")
    arr("RNS_ROW", [w for L in LANES for w in L["row"]],
        "the lane's row of its extension's weights (B': from B, B: from B'), 14 per lane")
    arr("RNS_POW32", [pow(2, 32 * k, L["m"]) for L in LANES for k in range(12)],
        "2^(32k) mod m_l, k < 12: integer words to residues")
    arr("RNS_ZERO", [L["zero"] for L in LANES], "(p f_l)^-1 mod m_l: x = k p iff every lane's x (p f)^-1 is k")
    arr("RNS_M2P", to_lanes(M * M % P), "M^2 mod p, lane form (into the Montgomery domain)")
    arr("RNS_ONE", to_lanes(1), "1, lane form (out of the Montgomery domain)")
    arr("RNS_B4", to_lanes(4 * M % P), "the curve's b = 4, Montgomery lane form")
    arr("RNS_BETA", to_lanes(beta() * M % P), "BETA (phi's cube root of unity), Montgomery lane form")
    arr("RNS_PMOD", to_lanes(P), "p, lane form (multiples keep subtractions non-negative)")
    arr("RNS_CRT_INV", [pow(L["f"] * (M // L["m"]), -1, L["m"]) for L in LANES[:N]],
        "B lanes to an integer: xi_i = x'_i (f_i M/m_i)^-1 mod m_i")
    arr("RNS_CRT_MI", [((M // m) >> (32 * w)) & 0xffffffff for m in BASE for w in range(14)],
        "M/m_i, 14 words each: the integer is sum xi_i M/m_i - k M", per_lane=False)
    arr("RNS_CRT_M", [(M >> (32 * w)) & 0xffffffff for w in range(15)], "M, 15 words", per_lane=False)
    return ("// Generated by kernels/ff/fp_rns_tables.py: do not edit.\n"
            "#ifndef SOVEREIGN_FF_FP_RNS_TABLES_CUH\n#define SOVEREIGN_FF_FP_RNS_TABLES_CUH\n\n"
            "#include \"common.cuh\"\n\n"
            f"#define RNS_N {N}\n#define RNS_W {W}\n#define RNS_TOP {TOP}\n\n" +
            "\n".join(rows) + "\n\n#endif\n")


if __name__ == "__main__":
    main()

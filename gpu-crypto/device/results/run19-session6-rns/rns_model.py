#!/usr/bin/env python3
"""Residue-number-system (RNS) Montgomery product for BLS12-381 Fp, lane by lane.

Experiment for issue 3 (session 6): one Fp element is 28 residues, one per lane of a warp,
modulo 28 primes just below 2^30 (base B: lanes 0-13, base B': lanes 14-27). A product is
elementwise; Montgomery reduction by M = prod(B) needs two base extensions (Kawamura et al.,
CHES 2000): B -> B' approximate (offset 0: q or q + M), B' -> B exact (offset 1/2). No
carries cross lanes: each extension is one broadcast of 14 residues and a 15-term dot
product per lane. This model runs the lanes' exact integer steps (every 64-bit sum is
checked against 2^64), checks the products against Python integers on random, extreme
and redundant inputs, and writes the constant tables the CUDA code reads (rns_tables.inc).
Prints "ok" when every check holds.
"""
import random
import sys

P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
N = 14                   # moduli per base
W = 30                   # bits per modulus
TOP = 8                  # bits of each xi kept for the extension's quotient estimate
MASK64 = (1 << 64) - 1


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
    out, c = [], 1
    while len(out) < 2 * N:
        if is_prime((1 << W) - c):
            out.append((1 << W) - c)
        c += 2
    return out


MODS = moduli()
BASE, BASE2 = MODS[:N], MODS[N:]
M = 1
for m in BASE:
    M *= m
M2 = 1
for m in BASE2:
    M2 *= m
C_MAX = max((1 << W) - m for m in MODS)
assert C_MAX < 1 << 11, C_MAX
# M / p ~ 2^39: a product's output stays below 2p + 2^-39 p b^2 for inputs below b p, so
# sums of a few products need no reduction before the next product.
assert M > (1 << 38) * P and M2 > (1 << 38) * P

# Per-lane constants. Lane l < N is in B, lane l >= N in B'.
#   K1: B: -p^-1 * (M/m_l)^-1 mod m_l (gives xi); B': M^-1 mod m'_l (t / M)
#   K2: the extension's quotient correction, added k times: B': -p mod m'_l; B: -M' mod m_l
#   K3: B': (M'/m'_l)^-1 mod m'_l (gives xi'); B: unused (1)
#   ROW[i]: B': p * m_i^-1 mod m'_l (i in B); B: M'/m'_i mod m_l (i in B')
def lane_constants():
    lanes = []
    for l, m in enumerate(MODS):
        if l < N:
            mi = M // m
            k1 = (-pow(P, -1, m) * pow(mi, -1, m)) % m
            k2 = (-M2) % m
            k3 = 1
            row = [(M2 // mj) % m for mj in BASE2]
        else:
            k1 = pow(M, -1, m)
            k2 = (-P) % m
            k3 = pow(M2 // m, -1, m)
            row = [P * pow(mi, -1, m) % m for mi in BASE]
        lanes.append(dict(m=m, c=(1 << W) - m, k1=k1, k2=k2, k3=k3, row=row))
    return lanes


LANES = lane_constants()


def mulmod(a, b, lane):
    """The kernel's mulmod: a, b < 2^30; result fully reduced."""
    m, c = lane["m"], lane["c"]
    assert a < 1 << W and b < 1 << W
    v = a * b
    assert v <= MASK64
    return reduce64(v, lane)


def reduce64(v, lane):
    """v < 2^64 -> v mod m for m = 2^30 - c: two folds of the bits above 30, one subtract."""
    m, c = lane["m"], lane["c"]
    assert 0 <= v <= MASK64
    h, lo = v >> W, v & ((1 << W) - 1)   # h < 2^34
    v = h * c + lo                       # < 2^45 + 2^30
    h, lo = v >> W, v & ((1 << W) - 1)   # h < 2^15 + 1
    v = h * c + lo                       # < 2^26 + 2^30 < 2m
    assert v < 1 << 32
    if v >= m:
        v -= m
    assert v < m
    return v


def quotient_estimate(xis, half):
    """floor(sum xi_i / m_i (+ 1/2)) from the top TOP bits of each xi."""
    s = sum(x >> (W - TOP) for x in xis)
    if half:
        s += 1 << (TOP - 1)
    return s >> TOP


def mont_mul(x, y):
    """x, y: lists of 2N residues. Returns the residues of x*y/M mod p (not reduced)."""
    u = [mulmod(mulmod(x[l], y[l], LANES[l]), LANES[l]["k1"], LANES[l]) for l in range(2 * N)]
    xi = u[:N]                            # broadcast 1 (B lanes' xi)
    k = quotient_estimate(xi, False)
    r = [0] * (2 * N)
    for l in range(N, 2 * N):
        L = LANES[l]
        acc = u[l] + sum(a * w for a, w in zip(xi, L["row"])) + k * L["k2"]
        assert acc <= MASK64, "B' sum overflows"
        r[l] = reduce64(acc, L)
    xi2 = [mulmod(r[l], LANES[l]["k3"], LANES[l]) for l in range(N, 2 * N)]  # broadcast 2
    k2 = quotient_estimate(xi2, True)
    for l in range(N):
        L = LANES[l]
        acc = sum(a * w for a, w in zip(xi2, L["row"])) + k2 * L["k2"]
        assert acc <= MASK64, "B sum overflows"
        r[l] = reduce64(acc, L)
    return r


def to_rns(v):
    return [v % m for m in MODS]


def from_rns(r):
    """CRT over both bases (for checking only)."""
    MM = M * M2
    v = 0
    for l, m in enumerate(MODS):
        mi = MM // m
        v += r[l] * mi * pow(mi, -1, m)
    return v % MM


def check_product(a, b, bound_in):
    x, y = to_rns(a), to_rns(b)
    r = mont_mul(x, y)
    v = from_rns(r)
    # r is the integer (a b + q^ p) / M with q^ in {q, q + M}: exact, and below the bound.
    assert (v * M - a * b) % P == 0, "not a Montgomery product"
    assert v < (bound_in * bound_in * P / M + 2) * P, "output above the bound"
    assert all(v % m == r[l] for l, m in enumerate(MODS)), "lanes disagree"
    return v


def main():
    rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    worst = 0.0
    for bound_in in (1, 2.2, 8.8, 20, 64):
        top = int(bound_in * P)
        edges = [0, 1, 2, P - 1, P, P + 1, top - 1, top - 2, (1 << 381) - 1 if top > 1 << 381 else top - 3]
        vals = edges + [rng.randrange(top) for _ in range(300)]
        for a in vals:
            for b in (edges[:4] + [rng.randrange(top) for _ in range(2)]) if a in edges else [rng.randrange(top)]:
                v = check_product(a, b, bound_in)
                worst = max(worst, v / P)
        # Chains of squarings keep the output bound.
        a = rng.randrange(top)
        x = to_rns(a)
        for _ in range(50):
            x = mont_mul(x, x)
            assert from_rns(x) < 2.001 * P
    # The exact extension's margin: outputs below 2.1 p are far below M'/2.
    assert 64 * P < M2 * (0.5 - N * (2 ** -TOP + C_MAX / 2 ** W))
    print(f"moduli 2^30 - c, c in [{(1<<W) - MODS[0]}, {C_MAX}]; M/p = {M / P:.1f}; "
          f"largest output {worst:.3f} p")
    write_tables()
    print("ok")


def write_tables():
    rows = []
    def arr(name, vals):
        rows.append(f"__device__ __constant__ u32 {name}[{len(vals)}] = {{" +
                    ", ".join(f"0x{v:08x}u" for v in vals) + "};")
    arr("RNS_M", [L["m"] for L in LANES])
    arr("RNS_C", [L["c"] for L in LANES])
    arr("RNS_K1", [L["k1"] for L in LANES])
    arr("RNS_K2", [L["k2"] for L in LANES])
    arr("RNS_K3", [L["k3"] for L in LANES])
    arr("RNS_ROW", [w for L in LANES for w in L["row"]])
    # Integer -> residues: 2^(32k) mod m_l, k < 12.
    arr("RNS_POW32", [pow(2, 32 * k, L["m"]) for L in LANES for k in range(12)])
    # Into the Montgomery domain: residues of M^2 mod p (a product with it multiplies by M).
    arr("RNS_M2P", to_rns(M * M % P))
    arr("RNS_B4_MONT", to_rns(4 * M % P))
    # Residues -> integer over base B: xi_i = r_i (M/m_i)^-1 mod m_i, then
    # sum xi_i (M/m_i) - k M. M/m_i as 14 words, M as 15, little-endian.
    arr("RNS_CRT_INV", [pow(M // m, -1, m) for m in BASE])
    arr("RNS_CRT_MI", [((M // m) >> (32 * w)) & 0xffffffff for m in BASE for w in range(14)])
    arr("RNS_CRT_M", [(M >> (32 * w)) & 0xffffffff for w in range(15)])
    # Multiples of p for subtraction (a - b + k p stays non-negative): 4p and 8p residues.
    arr("RNS_PMOD", to_rns(P))
    with open("rns_tables.inc", "w") as f:
        f.write("// Generated by rns_model.py: do not edit.\n")
        f.write(f"#define RNS_N {N}\n#define RNS_W {W}\n#define RNS_TOP {TOP}\n")
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()

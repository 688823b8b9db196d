# Lane-level model of the warp-cooperative Montgomery product (radix 2^28, 14 limbs, lane k
# = limb k) in its first version (mul_v1.inc: carry steps by shuffles, the low half's carry c
# from columns 11..13): checks every bound the kernel relies on (columns below 2^64, the
# exact carry, result lanes 14.. zero, limbs below 2^29.02, values below 2.1p) on random,
# extreme (p - 1, p - 2, ...) and redundant inputs. python3 fp_warp_model.py
import random
p = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
W = 28; N = 14; R = 1 << (W * N); M = (1 << W) - 1
NP = (-pow(p, -1, R)) % R
plimb = [(p >> (W * i)) & M for i in range(N)]
nlimb = [(NP >> (W * i)) & M for i in range(N)]
def val(l): return sum(x << (W * i) for i, x in enumerate(l))
def split(c):  # 64-bit column -> (a, b, d)
    assert 0 <= c < 1 << 64
    return c & M, (c >> W) & M, c >> (2 * W)
def normalize(cols, lanes=32):
    a = [split(c)[0] for c in cols]; b = [split(c)[1] for c in cols]; d = [split(c)[2] for c in cols]
    return [a[k] + (b[k-1] if k >= 1 else 0) + (d[k-2] if k >= 2 else 0) for k in range(lanes)]
def mul(a, b):
    assert len(a) == 32 and all(x == 0 for x in a[N:]) and all(x == 0 for x in b[N:])
    A = a[:N]
    T = [sum(A[i] * b[(k - i) & 31] for i in range(N)) for k in range(32)]
    Tn = normalize(T)
    assert all(x == 0 for x in Tn[29:]), Tn
    assert val(Tn) == val(a) * val(b)
    mcol = [sum(Tn[i] * (nlimb[k - i] if 0 <= k - i < N else 0) for i in range(N)) if k < N else 0 for k in range(32)]
    mn = normalize(mcol)
    mn = [x if k < N else 0 for k, x in enumerate(mn)]
    m = val(mn)
    assert (val(Tn) + m * p) % R == 0
    U = [Tn[k] + sum(mn[i] * (plimb[k - i] if 0 <= k - i < N else 0) for i in range(N)) for k in range(32)]
    assert all(u < 1 << 64 for u in U)
    assert val(U) == val(Tn) + m * p
    H = (U[13] << 56) + (U[12] << 28) + U[11]
    c = (H + (1 << 84) - 1) >> 84
    low = sum(U[k] << (W * k) for k in range(N))
    assert low == c << (W * N), (low, c)
    U2 = list(U); U2[14] += c
    sa = [split(x)[0] for x in U2]; sb = [split(x)[1] for x in U2]; sd = [split(x)[2] for x in U2]
    r = []
    for j in range(32):
        if j >= N:
            r.append(0); continue
        v = sa[j + 14] + (sb[j + 13] if j >= 1 else 0) + (sd[j + 12] if j >= 2 else 0)
        r.append(v)
    # lanes >= 14 must be zero by the value bound
    full = [sa[j + 14] + (sb[j + 13] if j >= 1 else 0) + (sd[j + 12] if j >= 2 else 0) if j + 14 < 32 else 0 for j in range(32)]
    assert all(x == 0 for x in full[N:18]), full
    assert val(r) == (val(Tn) + m * p) // R
    assert max(r) < 2**29.02
    return r
def limbs(x): return [(x >> (W * i)) & M for i in range(N)] + [0] * 18
Rinv = pow(R, -1, p)
random.seed(1)
worst = 0
for t in range(3000):
    x = random.randrange(p); y = random.randrange(p)
    if t % 3 == 0: x = p - 1 - random.randrange(4)
    a = limbs(x); b = limbs(y)
    for _ in range(5):
        r = mul(a, b)
        assert val(r) % p == val(a) * val(b) * Rinv % p
        assert val(r) < 2.1 * p
        worst = max(worst, val(r) / p, max(r) / 2**28)
        a, b = r, r
# adversarial redundant limbs: all limbs near 2^29 with value < 2.1p? build max-limb values
for t in range(2000):
    r = [random.randrange(2**29) for _ in range(N)]
    v = val(r)
    if v >= 2.1 * p: continue
    a = r + [0]*18
    out = mul(a, a)
print("ok worst", worst)

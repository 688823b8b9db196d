#!/usr/bin/env python3
"""Prints the width-3 sliding-window steps of (p-3)/4, the exponent of sqrt_ratio in the
simplified SWU map for BLS12-381 G1 (RFC 9380 appendix F.2.1.2, q = 3 mod 4), in the
packed form kernels/ec/g1_sswu.cuh embeds ((squarings << 3) | digit; digit 0: squarings
only), after checking that the steps rebuild the exponent."""

P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
WIDTH = 3


def windows(e: int, width: int):
    bits = bin(e)[2:]
    i = 0
    while i < len(bits):
        if bits[i] == "0":
            i += 1
            continue
        j = min(i + width, len(bits))
        while bits[j - 1] == "0":
            j -= 1
        yield j, int(bits[i:j], 2)
        i = j


def main() -> None:
    e = (P - 3) // 4
    wins = list(windows(e, WIDTH))
    (end, leading), rest = wins[0], wins[1:]
    steps = []
    for w_end, digit in rest:
        steps.append((w_end - end, digit))
        end = w_end
    if end < e.bit_length():
        steps.append((e.bit_length() - end, 0))  # trailing zero bits
    acc = leading
    for squarings, digit in steps:
        acc = (acc << squarings) + digit
    assert acc == e
    assert all(s < 32 for s, _ in steps)
    packed = [(s << 3) | d for s, d in steps]
    mults = sum(1 for _, d in steps if d)
    print(f"leading digit {leading}, {len(steps)} steps, "
          f"{sum(s for s, _ in steps) + 1} squarings, {mults + 3} multiplications")
    for i in range(0, len(packed), 12):
        print("    " + ", ".join(f"0x{v:02x}" for v in packed[i:i + 12]) + ",")


if __name__ == "__main__":
    main()

// Host run of kernels/ops/bls_verify.cu against ic_bls12_381 vectors (see check.sh).
// Lines: "prod N P1 Q1 ... PN QN GT" (hex encodings) and "batch N" followed by N lines
// "SIG H PK R OK".
#include "ops/bls_verify.cu"
#include "ops/bls_pairing.cu"
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static std::vector<u8> unhex(const std::string& s) {
    std::vector<u8> v(s.size() / 2);
    for (size_t i = 0; i < v.size(); i++) v[i] = (u8)std::stoi(s.substr(2 * i, 2), nullptr, 16);
    return v;
}

static void at(u32 i) { blockIdx.x = i; threadIdx.x = 0; }

int main(int argc, char** argv) {
    std::ifstream in(argv[1]);
    std::string line;
    int failures = 0, checks = 0;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string kind;
        ls >> kind;
        if (kind == "prod") {
            u32 n;
            ls >> n;
            std::vector<u8> pairs;
            for (u32 i = 0; i < n; i++) {
                std::string p, q;
                ls >> p >> q;
                auto pb = unhex(p), qb = unhex(q);
                pairs.insert(pairs.end(), pb.begin(), pb.end());
                pairs.insert(pairs.end(), qb.begin(), qb.end());
            }
            std::string gt;
            ls >> gt;
            u32 starts[2] = {0, n};
            u8 out[576];
            at(0);
            bls_pairing_products(pairs.data(), starts, 1, out);
            checks++;
            if (memcmp(out, unhex(gt).data(), 576) != 0) {
                failures++;
                printf("prod %u: Gt mismatch\n", n);
            }
        } else if (kind == "batch") {
            u32 n;
            ls >> n;
            std::vector<u8> items;
            std::vector<int> expect;
            std::string neg_g2_hex;
            ls >> neg_g2_hex;
            auto neg_g2 = unhex(neg_g2_hex);
            for (u32 i = 0; i < n; i++) {
                std::getline(in, line);
                std::istringstream is(line);
                std::string sig, h, pk, r;
                int ok;
                is >> sig >> h >> pk >> r >> ok;
                for (auto& s : {sig, h, pk, r}) {
                    auto b = unhex(s);
                    items.insert(items.end(), b.begin(), b.end());
                }
                expect.push_back(ok);
            }
            // Level 0 = leaves; then levels up to the root, stored one after another.
            std::vector<fp12_t> f(2 * n + 2);
            std::vector<g1_proj_t> s(2 * n + 2);
            for (u32 i = 0; i < n; i++) { at(i); bls_rlc_leaves(items.data(), n, f.data(), s.data()); }
            u32 off = 0, len = n;
            while (len > 1) {
                u32 next = (len + 1) / 2;
                for (u32 j = 0; j < next; j++) {
                    at(j);
                    bls_tree_level(f.data() + off, s.data() + off, len, f.data() + off + len, s.data() + off + len);
                }
                off += len;
                len = next;
            }
            std::vector<u32> nodes;
            for (u32 i = 0; i < n; i++) nodes.push_back(i);
            nodes.push_back(off);  // the root
            std::vector<u8> verdicts(nodes.size());
            for (u32 k = 0; k < nodes.size(); k++) {
                at(k);
                bls_check_nodes(f.data(), s.data(), nodes.data(), (u32)nodes.size(), neg_g2.data(), verdicts.data());
            }
            int all = 1;
            for (u32 i = 0; i < n; i++) {
                checks++;
                all &= expect[i];
                if (verdicts[i] != expect[i]) { failures++; printf("batch %u item %u: got %d want %d\n", n, i, verdicts[i], expect[i]); }
            }
            checks++;
            if (verdicts[n] != all) { failures++; printf("batch %u root: got %d want %d\n", n, verdicts[n], all); }
            // Two threads per item: leaves 2i (message side) and 2i + 1 (signature side),
            // items on level 1, checks by final exponentiation alone.
            std::vector<fp12_t> f2(4 * n + 4);
            for (u32 t = 0; t < 2 * n; t++) { at(t); bls_rlc_halves(items.data(), n, neg_g2.data(), f2.data()); }
            off = 0; len = 2 * n;
            u32 level1 = 0;
            while (len > 1) {
                u32 next = (len + 1) / 2;
                for (u32 j = 0; j < next; j++) {
                    at(j);
                    bls_tree_level(f2.data() + off, nullptr, len, f2.data() + off + len, nullptr);
                }
                off += len;
                if (level1 == 0) level1 = off;
                len = next;
            }
            std::vector<u32> nodes2;
            for (u32 i = 0; i < n; i++) nodes2.push_back(level1 + i);
            nodes2.push_back(off);
            std::vector<u8> v2(nodes2.size());
            for (u32 k = 0; k < nodes2.size(); k++) {
                at(k);
                bls_check_nodes(f2.data(), nullptr, nodes2.data(), (u32)nodes2.size(), neg_g2.data(), v2.data());
            }
            for (u32 i = 0; i <= n; i++) {
                checks++;
                int want = i < n ? expect[i] : all;
                if (v2[i] != want) { failures++; printf("split batch %u node %u: got %d want %d\n", n, i, v2[i], want); }
            }
        }
    }
    printf("%d checks, %d failures\n", checks, failures);
    return failures != 0;
}

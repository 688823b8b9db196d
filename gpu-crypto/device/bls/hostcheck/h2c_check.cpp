// Host run (g++) of kernels/ops/hash_to_g1.cu against the RFC 9380 vectors in
// gpu-crypto/testdata/hash_to_g1/ (see check.sh). Exit status: the number of mismatches.
#include "ops/hash_to_g1.cu"
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    std::ifstream in(argv[1]);
    std::string line, dst;
    std::vector<std::string> msgs, want;
    while (std::getline(in, line)) {
        if (line.rfind("dst ", 0) == 0) dst = line.substr(4);
        else if (line == "msg" || line.rfind("msg ", 0) == 0) msgs.push_back(line.size() > 4 ? line.substr(4) : "");
        else if (line.rfind("P ", 0) == 0) want.push_back(line.substr(2));
    }
    std::vector<u8> data(dst.begin(), dst.end());
    std::vector<u32> recs;
    for (auto& m : msgs) {
        recs.push_back(data.size()); recs.push_back(m.size()); recs.push_back(0); recs.push_back(dst.size());
        data.insert(data.end(), m.begin(), m.end());
    }
    std::vector<u8> out(96 * msgs.size());
    int fails = 0;
    // Blocks of 64 threads for 32 messages: warp 1 (threads 32..63) hands its map over to
    // warp 0 in shared memory, so on the host it runs first.
    for (u32 b = 0; b * 32 < msgs.size(); b++) {
        blockIdx.x = b;
        for (u32 t = 32; t < 96; t++) {
            threadIdx.x = t & 63;
            hash_to_g1(data.data(), recs.data(), msgs.size(), out.data());
        }
    }
    for (u32 i = 0; i < msgs.size(); i++) {
        char hex[193];
        for (int k = 0; k < 96; k++) snprintf(hex + 2 * k, 3, "%02x", out[96 * i + k]);
        const bool ok = i < want.size() && want[i] == hex;
        fails += !ok;
        printf("message of %zu bytes: %s\n", msgs[i].size(), ok ? "ok" : "MISMATCH");
    }
    printf("%zu vectors, %d mismatches\n", msgs.size(), fails);
    return fails;
}

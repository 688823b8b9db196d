// Fixed-width types for kernels compiled by NVRTC, which ships no <cstdint>.
#ifndef SOVEREIGN_COMMON_CUH
#define SOVEREIGN_COMMON_CUH

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

#endif

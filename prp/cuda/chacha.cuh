// The ChaCha block function (RFC 8439 state layout), one generic core for every round count.
// Shared by every kernel that needs ChaCha output: include "chacha.cuh".
//
// State: words 0..3 the constants, 4..11 the key (little-endian words), 12 the block counter,
// 13..15 the nonce. Output: the state after ROUNDS rounds plus the input state.
#pragma once
#include "common.cuh"

// A 256-bit ChaCha key as eight little-endian words.
struct ChaChaKey {
    u32 words[8];
};

// "expand 32-byte k" as four little-endian words.
#define CHACHA_CONST0 0x61707865u
#define CHACHA_CONST1 0x3320646eu
#define CHACHA_CONST2 0x79622d32u
#define CHACHA_CONST3 0x6b206574u

// The block function is bound by the integer ALU pipe (XOR, shifts, byte permutes) while the
// multiplier pipe, which takes the additions as IMAD, has room to spare. So one of the four
// rotations runs on the multiplier: x * 2^12 as a 64-bit product, whose halves add to the
// rotation. On an H100 this took ChaCha8 from 60.5 to 61.4 G blocks/s; moving the rotation by
// 7 as well overloads the multiplier (51.5 G blocks/s). The mul.wide is written in PTX so that
// the compiler does not fold it back into a funnel shift.
__device__ __forceinline__ u32 chacha_rotl12(u32 x) {
    u64 product;
    asm("mul.wide.u32 %0, %1, 4096;" : "=l"(product) : "r"(x));
    return (u32)product + (u32)(product >> 32);
}

__device__ __forceinline__ u32 chacha_rotl7(u32 x) { return __funnelshift_l(x, x, 7); }

// Rotations by 16 and 8 are byte permutations (one PRMT instruction).
__device__ __forceinline__ u32 chacha_rotl16(u32 x) { return __byte_perm(x, 0, 0x1032); }
__device__ __forceinline__ u32 chacha_rotl8(u32 x) { return __byte_perm(x, 0, 0x2103); }

__device__ __forceinline__ void chacha_quarter_round(u32& a, u32& b, u32& c, u32& d) {
    a += b; d ^= a; d = chacha_rotl16(d);
    c += d; b ^= c; b = chacha_rotl12(b);
    a += b; d ^= a; d = chacha_rotl8(d);
    c += d; b ^= c; b = chacha_rotl7(b);
}

// out = block(key, counter, [nonce0, nonce1, nonce2]) after ROUNDS rounds (ROUNDS even).
template <int ROUNDS>
__device__ __forceinline__ void chacha_block(const ChaChaKey& key, u32 counter, u32 nonce0,
                                             u32 nonce1, u32 nonce2, u32 out[16]) {
    static_assert(ROUNDS > 0 && ROUNDS % 2 == 0, "ChaCha round count must be even");
    u32 x[16] = {CHACHA_CONST0, CHACHA_CONST1, CHACHA_CONST2, CHACHA_CONST3,
                 key.words[0], key.words[1], key.words[2], key.words[3],
                 key.words[4], key.words[5], key.words[6], key.words[7],
                 counter, nonce0, nonce1, nonce2};
#pragma unroll
    for (int r = 0; r < ROUNDS; r += 2) {
        chacha_quarter_round(x[0], x[4], x[8], x[12]);
        chacha_quarter_round(x[1], x[5], x[9], x[13]);
        chacha_quarter_round(x[2], x[6], x[10], x[14]);
        chacha_quarter_round(x[3], x[7], x[11], x[15]);
        chacha_quarter_round(x[0], x[5], x[10], x[15]);
        chacha_quarter_round(x[1], x[6], x[11], x[12]);
        chacha_quarter_round(x[2], x[7], x[8], x[13]);
        chacha_quarter_round(x[3], x[4], x[9], x[14]);
    }
    out[0] = x[0] + CHACHA_CONST0;
    out[1] = x[1] + CHACHA_CONST1;
    out[2] = x[2] + CHACHA_CONST2;
    out[3] = x[3] + CHACHA_CONST3;
#pragma unroll
    for (int i = 0; i < 8; ++i) out[4 + i] = x[4 + i] + key.words[i];
    out[12] = x[12] + counter;
    out[13] = x[13] + nonce0;
    out[14] = x[14] + nonce1;
    out[15] = x[15] + nonce2;
}

// Rpo256 (miden-crypto 0.28.1): Merkle tree levels and row hashing, one thread per hash.

#include "rpo.cuh"

struct Rpo {
    static __device__ __forceinline__ void permute(u64* s, const ConstantBank& c) {
#pragma unroll 1
        for (int r = 0; r < 7; r++) rpo_round(s, c, r);
    }
};

TREE_KERNELS(MidenSponge<Rpo>)

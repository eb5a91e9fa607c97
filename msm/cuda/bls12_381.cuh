// BLS12-381's parameters for field.cuh: the base field Fq (381 bits, twelve 32-bit limbs, R =
// 2^384, as arkworks' `Fq`) and the scalar field's modulus r (255 bits). Each constant is a list of
// 32-bit limbs, least significant first; `tests/suite/constants.rs` checks every one against
// ark-bls12-381.
#pragma once
#include "field.cuh"

#define BLS12_381_FQ_MODULUS 0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau
// R mod q: one in Montgomery form.
#define BLS12_381_FQ_ONE 0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u, 0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u
// -q^-1 mod 2^32.
#define BLS12_381_FQ_INV 0xfffcfffdu
#define BLS12_381_FR_MODULUS 0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u, 0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u
// -r^-1 mod 2^32 (r = 1 mod 2^32).
#define BLS12_381_FR_INV 0xffffffffu

FIELD_PARAMS(Bls12_381Fq, 12, BLS12_381_FQ_INV, BLS12_381_FQ_MODULUS, BLS12_381_FQ_ONE)
SCALAR_PARAMS(Bls12_381Fr, BLS12_381_FR_INV, BLS12_381_FR_MODULUS)

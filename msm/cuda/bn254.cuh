// BN254's parameters for field.cuh: the base field Fq (254 bits, eight 32-bit limbs, R = 2^256, as
// arkworks' `Fq`) and the scalar field's modulus r (254 bits). Each constant is a list of 32-bit
// limbs, least significant first; `tests/suite/constants.rs` checks every one against ark-bn254.
#pragma once
#include "field.cuh"

#define BN254_FQ_MODULUS 0xd87cfd47u, 0x3c208c16u, 0x6871ca8du, 0x97816a91u, 0x8181585du, 0xb85045b6u, 0xe131a029u, 0x30644e72u
// R mod q: one in Montgomery form.
#define BN254_FQ_ONE 0xc58f0d9du, 0xd35d438du, 0xf5c70b3du, 0x0a78eb28u, 0x7879462cu, 0x666ea36fu, 0x9a07df2fu, 0x0e0a77c1u
// -q^-1 mod 2^32.
#define BN254_FQ_INV 0xe4866389u
#define BN254_FR_MODULUS 0xf0000001u, 0x43e1f593u, 0x79b97091u, 0x2833e848u, 0x8181585du, 0xb85045b6u, 0xe131a029u, 0x30644e72u
// -r^-1 mod 2^32.
#define BN254_FR_INV 0xefffffffu

FIELD_PARAMS(Bn254Fq, 8, BN254_FQ_INV, BN254_FQ_MODULUS, BN254_FQ_ONE)
SCALAR_PARAMS(Bn254Fr, BN254_FR_INV, BN254_FR_MODULUS)

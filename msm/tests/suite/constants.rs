//! The curve constants typed into the CUDA headers (`cuda/bls12_381.cuh`, `cuda/bn254.cuh`)
//! against arkworks: each field's modulus, one in Montgomery form (R mod q) and -q^-1 mod 2^32,
//! and each scalar field's modulus and -r^-1 mod 2^32. Needs neither NVRTC nor a GPU.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ark_ff::{BigInteger, PrimeField};
use kernels::source::Header;
use msm::source::{BLS12_381_HEADER, BN254_HEADER};

/// The values of `#define name v0, v1, ...` in `header`, as integers.
fn define(header: &Header, name: &str) -> Vec<u32> {
    let prefix = format!("#define {name} ");
    let line = header
        .text
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{} defines no {name}", header.name));
    line.split(',')
        .map(|value| {
            let hex = value.trim().trim_end_matches('u');
            let hex = hex.strip_prefix("0x").expect("hexadecimal limbs");
            u32::from_str_radix(hex, 16).unwrap()
        })
        .collect()
}

/// An integer's 32-bit limbs, least significant first.
fn limbs32<B: BigInteger>(value: B) -> Vec<u32> {
    value
        .as_ref()
        .iter()
        .flat_map(|&limb| [limb as u32, (limb >> 32) as u32])
        .collect()
}

/// -q^-1 mod 2^32 for odd q, by Newton's iteration (each step doubles the correct bits).
fn minus_inverse_mod_2_32(q: u32) -> u32 {
    let mut inverse = 1u32;
    for _ in 0..5 {
        inverse = inverse.wrapping_mul(2u32.wrapping_sub(q.wrapping_mul(inverse)));
    }
    assert_eq!(q.wrapping_mul(inverse), 1);
    inverse.wrapping_neg()
}

/// The base field `Fq`'s constants under `prefix` (`BN254_FQ`).
fn check_base_field<Fq: PrimeField>(header: &Header, prefix: &str) {
    let modulus = limbs32(Fq::MODULUS);
    assert_eq!(define(header, &format!("{prefix}_MODULUS")), modulus);
    // One in Montgomery form is R mod q, R = 2^(32 limbs).
    let r = Fq::from(2u64).pow([32 * modulus.len() as u64]);
    assert_eq!(
        define(header, &format!("{prefix}_ONE")),
        limbs32(r.into_bigint())
    );
    assert_eq!(
        define(header, &format!("{prefix}_INV")),
        [minus_inverse_mod_2_32(modulus[0])]
    );
}

/// The scalar field `Fr`'s constants under `prefix` (`BN254_FR`).
fn check_scalar_field<Fr: PrimeField>(header: &Header, prefix: &str) {
    let modulus = limbs32(Fr::MODULUS);
    assert_eq!(modulus.len(), 8);
    assert_eq!(define(header, &format!("{prefix}_MODULUS")), modulus);
    assert_eq!(
        define(header, &format!("{prefix}_INV")),
        [minus_inverse_mod_2_32(modulus[0])]
    );
}

#[test]
fn bls12_381_constants_equal_arkworks() {
    check_base_field::<ark_bls12_381::Fq>(&BLS12_381_HEADER, "BLS12_381_FQ");
    check_scalar_field::<ark_bls12_381::Fr>(&BLS12_381_HEADER, "BLS12_381_FR");
}

#[test]
fn bn254_constants_equal_arkworks() {
    check_base_field::<ark_bn254::Fq>(&BN254_HEADER, "BN254_FQ");
    check_scalar_field::<ark_bn254::Fr>(&BN254_HEADER, "BN254_FR");
}

/// The limb counts the headers declare match arkworks' (12 and 8 32-bit limbs).
#[test]
fn limb_counts_equal_arkworks() {
    let declared = |header: &Header, name: &str| {
        let marker = format!("FIELD_PARAMS({name}, ");
        let rest = header.text.split(&marker).nth(1).expect("FIELD_PARAMS");
        rest.split(',')
            .next()
            .unwrap()
            .trim()
            .parse::<usize>()
            .unwrap()
    };
    assert_eq!(
        declared(&BLS12_381_HEADER, "Bls12_381Fq"),
        limbs32(ark_bls12_381::Fq::MODULUS).len()
    );
    assert_eq!(
        declared(&BN254_HEADER, "Bn254Fq"),
        limbs32(ark_bn254::Fq::MODULUS).len()
    );
}

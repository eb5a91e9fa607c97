//! `fhe-pbs` under extreme values, many threads and GPU faults.
//!
//! Every public constructor and function that takes a dimension, a length, an index, a
//! count or a parameter is fed 0, 1, `usize::MAX` (or `u64::MAX`, `u32::MAX`), values whose
//! products overflow, and lengths that disagree with the dimensions: each call must return
//! the documented error or the right value, never panic and never try to allocate a size it
//! was only told about. Secret keys must not show in `Debug` or error text. The GPU tests
//! (ignored without a GPU) share one backend among 8 threads and fill the GPU's memory in the
//! middle of a batch.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fhe_pbs::bootstrap_key::encrypt_ggsw_with_randomness;
use fhe_pbs::decomposition::{
    closest_representable, decompose, decompose_into, decompose_slice, recompose,
};
use fhe_pbs::glwe::{encrypt_glwe_with_randomness, glwe_phase, sample_extract};
use fhe_pbs::keyswitch::keyswitch;
use fhe_pbs::lut::lut_polynomial;
use fhe_pbs::lwe::{decode, encode, encrypt_lwe, encrypt_lwe_with_randomness, lwe_phase};
use fhe_pbs::modswitch::{
    centered_body_correction, modulus_switch, modulus_switch_lwe, multi_bit_degrees,
};
use fhe_pbs::params::{MAX_BIG_LWE_DIMENSION, MAX_LWE_DIMENSION};
use fhe_pbs::polynomial::{multiply_by_monomial, negacyclic_mul, negacyclic_mul_schoolbook};
use fhe_pbs::{
    BlindRotationMode, BootstrapKey, Bootstrapper, ClientKey, Cpu, Csprng, DecompositionParams,
    Error, EvaluationKeys, GlweCiphertext, GlweDimension, GlweSecretKey, GroupingFactor,
    KeyswitchKey, LookupTable, LweCiphertext, LweDimension, LweSecretKey, ModulusSwitchType,
    MultiBitBootstrapKey, NoiseDistribution, ParameterSpec, Parameters, PolynomialSize,
    fft::NegacyclicFft,
};
use proptest::prelude::*;

use crate::assert_send_sync;

/// Sizes whose words cannot be allocated (their bytes overflow or pass `isize::MAX`), so
/// that a check forgotten would show as a panic rather than as a huge allocation.
const BIG: [usize; 6] = [
    usize::MAX,
    usize::MAX - 1,
    usize::MAX / 2,
    usize::MAX / 2 + 1,
    1 << 61,
    1 << 62,
];

const NOISELESS: NoiseDistribution = NoiseDistribution::Gaussian { std: 0.0 };

/// Noise distributions [`Parameters::new`] refuses.
const BAD_NOISE: [NoiseDistribution; 7] = [
    NoiseDistribution::TUniform { bound_log2: 63 },
    NoiseDistribution::TUniform {
        bound_log2: u32::MAX,
    },
    NoiseDistribution::Gaussian { std: f64::NAN },
    NoiseDistribution::Gaussian { std: f64::INFINITY },
    NoiseDistribution::Gaussian { std: -1e-9 },
    NoiseDistribution::Gaussian { std: 0.26 },
    NoiseDistribution::Gaussian { std: f64::MAX },
];

fn is_invalid(result: Result<impl std::fmt::Debug, Error>, field: &str) -> bool {
    matches!(result, Err(Error::InvalidParameter { name, .. }) if name == field)
}

fn is_dimension_mismatch<T>(result: &Result<T, Error>) -> bool {
    matches!(result, Err(Error::DimensionMismatch { .. }))
}

fn is_size_overflow<T>(result: &Result<T, Error>) -> bool {
    matches!(result, Err(Error::SizeOverflow { .. }))
}

fn decomposition(base_log: usize, level_count: usize) -> DecompositionParams {
    DecompositionParams::new(base_log, level_count).unwrap()
}

/// A tiny, insecure and noiseless classic set (`n = 8`, `N = 512`): fast in debug builds,
/// and exact, so every bootstrap decrypts to its table's value.
fn tiny_spec() -> ParameterSpec {
    ParameterSpec {
        lwe_dimension: LweDimension(8),
        glwe_dimension: GlweDimension(1),
        polynomial_size: PolynomialSize(512),
        lwe_noise: NOISELESS,
        glwe_noise: NOISELESS,
        pbs_decomposition: decomposition(16, 2),
        ks_decomposition: decomposition(4, 8),
        plaintext_modulus: 8,
        modulus_switch: ModulusSwitchType::Standard,
    }
}

fn tiny_keys() -> (ClientKey, EvaluationKeys) {
    let params = Parameters::new(tiny_spec()).unwrap();
    let mut rng = Csprng::from_seed([3; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    (client, keys)
}

/// Backends, contexts, keys and the errors cross threads and are shared between them.
#[test]
fn backends_and_keys_are_send_and_sync() {
    assert_send_sync::<Cpu>();
    assert_send_sync::<fhe_pbs::Backend>();
    #[cfg(feature = "cuda")]
    {
        assert_send_sync::<fhe_pbs::Cuda>();
        assert_send_sync::<fhe_pbs::MultiGpu>();
        assert_send_sync::<fhe_pbs::DeviceLweCiphertexts>();
    }
    assert_send_sync::<EvaluationKeys>();
    assert_send_sync::<ClientKey>();
    assert_send_sync::<LookupTable>();
    assert_send_sync::<Error>();
}

#[test]
fn lwe_ciphertexts_of_extreme_sizes() {
    assert!(is_dimension_mismatch(&LweCiphertext::from_vec(vec![])));
    assert!(is_dimension_mismatch(&LweCiphertext::from_vec(vec![7])));
    assert!(is_dimension_mismatch(&LweCiphertext::trivial(
        5,
        LweDimension(0)
    )));
    for dimension in BIG {
        assert!(
            is_size_overflow(&LweCiphertext::trivial(5, LweDimension(dimension))),
            "{dimension}"
        );
    }
    let one = LweCiphertext::trivial(u64::MAX, LweDimension(1)).unwrap();
    assert_eq!(one.as_slice(), &[0, u64::MAX]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A GLWE ciphertext wraps its words exactly when there are `(k + 1) N` of them.
    #[test]
    fn glwe_ciphertext_sizes(
        k in prop_oneof![0usize..4, prop::sample::select(BIG.to_vec())],
        n in prop_oneof![0usize..9, prop::sample::select(BIG.to_vec())],
        len in 0usize..40,
    ) {
        let result = GlweCiphertext::from_vec(vec![1; len], GlweDimension(k), PolynomialSize(n));
        match k.checked_add(1).and_then(|k1| k1.checked_mul(n)) {
            _ if k == 0 || n == 0 => prop_assert!(result.is_err()),
            None => prop_assert!(is_size_overflow(&result) || is_dimension_mismatch(&result)),
            Some(words) if words == len => {
                let ct = result.unwrap();
                prop_assert_eq!(ct.body().len(), n);
                prop_assert_eq!(ct.polynomial(k).unwrap(), ct.body());
                for j in [k + 1, k + 2, usize::MAX] {
                    prop_assert!(is_dimension_mismatch(&ct.polynomial(j)));
                }
                prop_assert_eq!(sample_extract(&ct).dimension(), LweDimension(k * n));
            }
            Some(_) => prop_assert!(is_dimension_mismatch(&result)),
        }
    }

    /// Raw key containers: accepted exactly when the length is the dimensions' product;
    /// an overflowing product is an error, never a wrapped size that happens to match.
    #[test]
    fn raw_key_containers(
        n in prop_oneof![0usize..5, prop::sample::select(BIG.to_vec())],
        k in prop_oneof![0usize..3, prop::sample::select(BIG.to_vec())],
        big_n in prop_oneof![0usize..5, prop::sample::select(BIG.to_vec())],
        (base_log, levels) in (1usize..=8).prop_flat_map(|b| (Just(b), 1..=64 / b)),
        g in prop_oneof![0usize..6, Just(usize::MAX)],
        len in 0usize..200,
    ) {
        let d = decomposition(base_log, levels);
        let data = vec![0u64; len];
        let words = |count: usize| {
            k.checked_add(1)
                .and_then(|k1| k1.checked_mul(k1))
                .and_then(|x| x.checked_mul(big_n))
                .and_then(|x| x.checked_mul(levels))
                .and_then(|x| x.checked_mul(count))
        };
        let bsk = BootstrapKey::from_vec(
            data.clone(), LweDimension(n), GlweDimension(k), PolynomialSize(big_n), d,
        );
        match words(n) {
            _ if n == 0 || k == 0 || big_n == 0 => prop_assert!(bsk.is_err()),
            Some(w) if w == len => {
                let bsk = bsk.unwrap();
                prop_assert_eq!(bsk.ggsw(n - 1).unwrap().len(), bsk.ggsw_len());
                for i in [n, usize::MAX] {
                    prop_assert!(is_dimension_mismatch(&bsk.ggsw(i)));
                }
            }
            Some(_) => prop_assert!(is_dimension_mismatch(&bsk)),
            None => prop_assert!(is_size_overflow(&bsk) || is_dimension_mismatch(&bsk)),
        }

        let ksk = KeyswitchKey::from_vec(data.clone(), LweDimension(n), LweDimension(k), d);
        let ks_words = (k.checked_add(1))
            .and_then(|x| x.checked_mul(levels))
            .and_then(|x| x.checked_mul(n));
        match ks_words {
            _ if n == 0 || k == 0 => prop_assert!(ksk.is_err()),
            Some(w) if w == len => prop_assert!(ksk.is_ok()),
            Some(_) => prop_assert!(is_dimension_mismatch(&ksk)),
            None => prop_assert!(is_size_overflow(&ksk) || is_dimension_mismatch(&ksk)),
        }

        let multi = MultiBitBootstrapKey::from_vec(
            data, LweDimension(n), GroupingFactor(g), GlweDimension(k), PolynomialSize(big_n), d,
        );
        let valid_g = (2..=4).contains(&g) && n > 0 && n % g == 0;
        if !valid_g {
            let refused = matches!(multi, Err(Error::InvalidParameter { .. }));
            prop_assert!(refused);
        } else if let Ok(key) = multi {
            prop_assert_eq!(Some(len), words(n / g * (1 << g)));
            let groups = n / g;
            prop_assert_eq!(key.group(groups - 1).unwrap().len(), (1 << g) * key.ggsw_len());
            for i in [groups, usize::MAX] {
                prop_assert!(is_dimension_mismatch(&key.group(i)));
            }
        }
    }

    /// The decomposition at every valid shape: digits recompose to the rounded value; any
    /// other shape is refused when it is made.
    #[test]
    fn decompositions_of_every_shape(
        base_log in prop_oneof![0usize..=65, Just(usize::MAX)],
        levels in prop_oneof![0usize..=65, Just(usize::MAX), Just(usize::MAX / 2 + 1)],
        x: u64,
    ) {
        let valid = base_log >= 1 && levels >= 1
            && base_log.checked_mul(levels).is_some_and(|bits| bits <= 64);
        let result = DecompositionParams::new(base_log, levels);
        prop_assert_eq!(result.is_ok(), valid);
        if let Ok(d) = result {
            let digits = decompose(x, d);
            prop_assert_eq!(digits.len(), levels);
            prop_assert_eq!(recompose(&digits, d).unwrap(), closest_representable(x, d));
            prop_assert!(recompose(&digits[1..], d).is_err());
            prop_assert!(decompose_into(x, d, &mut vec![0; levels + 1]).is_err());
            let input = [x, !x, 0, u64::MAX];
            let mut out = vec![0; levels * input.len()];
            decompose_slice(&input, d, &mut out).unwrap();
            prop_assert_eq!(&out[..levels * 4].iter().step_by(4).copied().collect::<Vec<_>>(), &digits);
            prop_assert!(decompose_slice(&input, d, &mut out[1..]).is_err());
        } else {
            prop_assert!(is_invalid(result, "decomposition"));
        }
    }

    /// The modulus switch for every power of two `N` it accepts, at the extreme words: the
    /// exact `round(x 2N / 2^64) mod 2N`.
    #[test]
    fn modulus_switch_at_every_size(log_n in 0u32..=62, x in prop_oneof![Just(u64::MAX), Just(0u64), Just(1u64 << 63), any::<u64>()]) {
        let n = 1usize << log_n;
        let two_n = 2u128 * n as u128;
        let exact = ((u128::from(x) * two_n + (1u128 << 63)) >> 64) % two_n;
        prop_assert_eq!(modulus_switch(x, PolynomialSize(n)).unwrap() as u128, exact);
        let ct = LweCiphertext::from_vec(vec![x, x, x]).unwrap();
        for switch in [ModulusSwitchType::Standard, ModulusSwitchType::CenteredMeanNoiseReduction] {
            let switched = modulus_switch_lwe(&ct, PolynomialSize(n), switch).unwrap();
            prop_assert!(switched.iter().all(|&s| (s as u128) < two_n));
        }
        prop_assert!(centered_body_correction(&[x, x], PolynomialSize(n)).is_ok());
        let degrees = multi_bit_degrees(&[x, x, x], PolynomialSize(n)).unwrap();
        prop_assert_eq!(degrees.len(), 7);
    }
}

#[test]
fn modulus_switch_refuses_other_sizes() {
    for n in [0, 3, 1 << 63, usize::MAX, (1 << 62) + 1] {
        assert!(is_invalid(
            modulus_switch(1, PolynomialSize(n)),
            "polynomial_size"
        ));
        assert!(centered_body_correction(&[1], PolynomialSize(n)).is_err());
        assert!(multi_bit_degrees(&[1, 2], PolynomialSize(n)).is_err());
    }
    for group in [&[][..], &[1], &[1, 2, 3, 4, 5]] {
        assert!(is_invalid(
            multi_bit_degrees(group, PolynomialSize(8)),
            "grouping_factor"
        ));
    }
}

#[test]
fn parameter_sets_at_the_edges() {
    let spec = tiny_spec();
    let with = |edit: &dyn Fn(&mut ParameterSpec)| {
        let mut s = spec;
        edit(&mut s);
        Parameters::new(s)
    };
    for n in [0, MAX_LWE_DIMENSION + 1, usize::MAX] {
        assert!(is_invalid(
            with(&|s| s.lwe_dimension = LweDimension(n)),
            "lwe_dimension"
        ));
    }
    assert!(with(&|s| s.lwe_dimension = LweDimension(MAX_LWE_DIMENSION)).is_ok());
    for k in [
        0,
        MAX_BIG_LWE_DIMENSION / 512 + 1,
        usize::MAX / 512,
        usize::MAX,
    ] {
        assert!(is_invalid(
            with(&|s| s.glwe_dimension = GlweDimension(k)),
            "glwe_dimension"
        ));
    }
    assert!(with(&|s| s.glwe_dimension = GlweDimension(MAX_BIG_LWE_DIMENSION / 512)).is_ok());
    for big_n in [0, 1, 256, 513, 16384, 1 << 62, usize::MAX] {
        assert!(is_invalid(
            with(&|s| s.polynomial_size = PolynomialSize(big_n)),
            "polynomial_size"
        ));
    }
    for p in [0, 1, 3, 1024, 1 << 63, u64::MAX] {
        assert!(is_invalid(
            with(&|s| s.plaintext_modulus = p),
            "plaintext_modulus"
        ));
    }
    for noise in BAD_NOISE {
        assert!(is_invalid(with(&|s| s.lwe_noise = noise), "lwe_noise"));
        assert!(is_invalid(with(&|s| s.glwe_noise = noise), "glwe_noise"));
    }
    for g in [0, 1, 5, usize::MAX] {
        let result = Parameters::new_multi_bit(spec, GroupingFactor(g));
        assert!(is_invalid(result, "grouping_factor"), "g = {g}");
        assert!(GroupingFactor(g).groups(LweDimension(8)).is_err());
    }
    assert!(is_invalid(
        Parameters::new_multi_bit(spec, GroupingFactor(3)),
        "lwe_dimension"
    ));
    assert_eq!(GroupingFactor(usize::MAX).ggsw_per_group(), usize::MAX);
    assert_eq!(
        GroupingFactor(4).groups(LweDimension(usize::MAX - 3)),
        Ok(usize::MAX / 4)
    );
    assert!(
        NoiseDistribution::TUniform {
            bound_log2: u32::MAX
        }
        .variance()
        .is_infinite()
    );
}

#[test]
fn secret_keys_of_extreme_sizes() {
    let mut rng = Csprng::from_seed([1; 32]);
    for n in [0, MAX_LWE_DIMENSION + 1, usize::MAX] {
        assert!(is_invalid(
            LweSecretKey::generate(LweDimension(n), &mut rng),
            "lwe_dimension"
        ));
    }
    for (k, n) in [
        (0, 8),
        (1, 0),
        (usize::MAX, 2),
        (2, usize::MAX),
        (1, MAX_BIG_LWE_DIMENSION + 1),
    ] {
        let result = GlweSecretKey::generate(GlweDimension(k), PolynomialSize(n), &mut rng);
        assert!(is_invalid(result, "glwe_dimension"), "k = {k}, N = {n}");
    }
    // Nothing was drawn by the refusals.
    assert_eq!(rng.next_u64(), Csprng::from_seed([1; 32]).next_u64());
    assert!(LweSecretKey::from_bits(vec![]).is_err());
    assert!(LweSecretKey::from_bits(vec![0, 2]).is_err());
    for (k, n) in [(usize::MAX, 2), (2, usize::MAX), (0, 4), (3, 1)] {
        let result = GlweSecretKey::from_bits(vec![1; 4], GlweDimension(k), PolynomialSize(n));
        assert!(result.is_err(), "k = {k}, N = {n}");
    }
    let key =
        GlweSecretKey::from_bits(vec![1, 0, 1, 1], GlweDimension(2), PolynomialSize(2)).unwrap();
    assert_eq!(key.to_lwe_key().dimension(), LweDimension(4));
}

#[test]
fn noise_and_encryption_refuse_bad_inputs() {
    let key = LweSecretKey::from_bits(vec![1, 0, 1]).unwrap();
    let glwe_key =
        GlweSecretKey::from_bits(vec![1, 0, 1, 1], GlweDimension(1), PolynomialSize(4)).unwrap();
    for noise in BAD_NOISE {
        let mut rng = Csprng::from_seed([2; 32]);
        assert!(is_invalid(rng.next_noise(noise), "noise distribution"));
        assert!(is_invalid(
            rng.fill_noise(&mut [0; 4], noise),
            "noise distribution"
        ));
        assert!(key.encrypt(1, noise, &mut rng).is_err());
        assert!(encrypt_lwe(key.as_slice(), 1, noise, &mut rng).is_err());
        assert!(glwe_key.encrypt(&[0; 4], noise, &mut rng).is_err());
        let d = decomposition(4, 2);
        assert!(KeyswitchKey::generate(&[1, 0], &key, d, noise, &mut rng).is_err());
        assert!(BootstrapKey::generate(&key, &glwe_key, d, noise, &mut rng).is_err());
        assert!(
            rng.next_u64() == Csprng::from_seed([2; 32]).next_u64(),
            "{noise:?} drew words"
        );
    }
    let mut rng = Csprng::from_seed([2; 32]);
    let good = NoiseDistribution::TUniform { bound_log2: 62 };
    assert!(rng.next_noise(good).is_ok());
    assert!(is_dimension_mismatch(&encrypt_lwe(
        &[],
        1,
        NOISELESS,
        &mut rng
    )));
    let d = decomposition(4, 2);
    assert!(is_dimension_mismatch(&KeyswitchKey::generate(
        &[],
        &key,
        d,
        NOISELESS,
        &mut rng
    )));
    let ksk = KeyswitchKey::generate(&[1, 0], &key, d, NOISELESS, &mut rng).unwrap();
    assert_eq!(ksk.noise_of(&[1, 0], &key, 1, 1), Ok(0));
    for (i, j) in [
        (2, 0),
        (0, 2),
        (usize::MAX, 0),
        (0, usize::MAX),
        (usize::MAX, usize::MAX),
    ] {
        let result = ksk.noise_of(&[1, 0], &key, i, j);
        assert!(is_dimension_mismatch(&result), "({i}, {j})");
    }
    assert!(is_dimension_mismatch(&ksk.noise_of(&[1], &key, 0, 0)));
    let group =
        MultiBitBootstrapKey::generate(&key, &glwe_key, GroupingFactor(2), d, NOISELESS, &mut rng);
    assert!(is_invalid(group, "lwe_dimension"));
    assert!(glwe_key.encrypt(&[0; 5], NOISELESS, &mut rng).is_err());

    // With given randomness: every length checked against the others.
    assert!(encrypt_lwe_with_randomness(&[1, 0], 5, &[1], 0).is_err());
    assert!(encrypt_lwe_with_randomness(&[], 5, &[], 0).is_err());
    let ok = encrypt_lwe_with_randomness(&[1, 0], 5, &[3, 4], 1).unwrap();
    assert_eq!(lwe_phase(&[1, 0], &ok), Ok(6));
    assert!(lwe_phase(&[1], &ok).is_err());
    assert!(encrypt_glwe_with_randomness(&[1; 4], &[0; 4], &[0; 3], &[0; 4]).is_err());
    assert!(encrypt_glwe_with_randomness(&[1; 4], &[0; 2], &[0; 4], &[0; 3]).is_err());
    assert!(encrypt_glwe_with_randomness(&[1; 4], &[0; 2], &[0; 4], &[0; 2]).is_ok());
    assert!(encrypt_glwe_with_randomness(&[], &[], &[], &[]).is_err());
    for n in [0, 3, usize::MAX] {
        let result = encrypt_ggsw_with_randomness(&[1; 4], PolynomialSize(n), 1, d, &[], &[]);
        assert!(is_dimension_mismatch(&result), "N = {n}");
    }
    assert!(encrypt_ggsw_with_randomness(&[1; 4], PolynomialSize(4), 1, d, &[0; 3], &[]).is_err());
    let ct = GlweCiphertext::trivial(&[1, 2, 3, 4], GlweDimension(1)).unwrap();
    assert!(glwe_phase(&[1; 3], &ct).is_err());
    assert!(GlweCiphertext::trivial(&[], GlweDimension(1)).is_err());
    assert!(GlweCiphertext::trivial(&[1], GlweDimension(0)).is_err());
    assert!(is_size_overflow(&GlweCiphertext::trivial(
        &[1, 2],
        GlweDimension(usize::MAX)
    )));
    assert!(is_size_overflow(&GlweCiphertext::trivial(
        &[1, 2],
        GlweDimension(1 << 60)
    )));
}

#[test]
fn encoding_and_tables_at_the_edges() {
    for p in [0, 1, 3, u64::MAX, (1 << 63) + 1] {
        assert!(is_invalid(encode(0, p), "plaintext_modulus"));
        assert!(is_invalid(decode(0, p), "plaintext_modulus"));
    }
    assert_eq!(
        encode(u64::MAX, 1 << 63),
        Err(Error::MessageOutOfRange {
            message: u64::MAX,
            modulus: 1 << 63
        })
    );
    assert_eq!(encode((1 << 63) - 1, 1 << 63), Ok((1 << 63) - 1));
    assert_eq!(decode(u64::MAX, 2), Ok(0));
    assert_eq!(decode(u64::MAX, 1 << 63), Ok((1 << 63) - 1));
    for (n, p) in [
        (0, 2),
        (3, 2),
        (usize::MAX, 2),
        (8, 16),
        (8, 0),
        (8, 3),
        (8, u64::MAX),
    ] {
        assert!(
            lut_polynomial(PolynomialSize(n), p, &[0; 2]).is_err(),
            "N = {n}, p = {p}"
        );
    }
    assert!(lut_polynomial(PolynomialSize(8), 4, &[0; 3]).is_err());
    assert!(matches!(
        lut_polynomial(PolynomialSize(8), 4, &[0, 1, 4, 2]),
        Err(Error::LutOutputOutOfRange {
            input: 2,
            output: 4,
            modulus: 4
        })
    ));
    let params = Parameters::new(tiny_spec()).unwrap();
    assert!(LookupTable::from_values(&params, &[0; 7]).is_err());
    assert!(LookupTable::from_values(&params, &[u64::MAX; 8]).is_err());
    assert!(LookupTable::new(&params, |m| m + 8).is_err());
}

#[test]
fn polynomials_of_mismatched_or_extreme_sizes() {
    let mut out = [0u64; 4];
    assert!(multiply_by_monomial(&mut out, &[1, 2, 3], 1).is_err());
    multiply_by_monomial(&mut out, &[1, 2, 3, 4], usize::MAX).unwrap();
    // X^(2^64 - 1) = X^(2^64 - 1 mod 8) = X^7 = -X^3 mod X^4 + 1.
    assert_eq!(out, [2, 3, 4, 1u64.wrapping_neg()]);
    multiply_by_monomial(&mut [], &[], usize::MAX).unwrap();
    assert!(negacyclic_mul(&mut out, &[1; 4], &[1; 3]).is_err());
    assert!(negacyclic_mul(&mut out[..3], &[1; 4], &[1; 4]).is_err());
    assert!(negacyclic_mul_schoolbook(&mut out, &[1; 4], &[1; 5]).is_err());
    negacyclic_mul(&mut [], &[], &[]).unwrap();
    let mut one = [0u64; 1];
    negacyclic_mul(&mut one, &[u64::MAX], &[u64::MAX]).unwrap();
    assert_eq!(one, [1]);
    for n in [0, 1, 3, usize::MAX, 1 << 63 | 1] {
        assert!(is_invalid(
            NegacyclicFft::new(PolynomialSize(n)),
            "polynomial_size"
        ));
    }
    let fft = NegacyclicFft::new(PolynomialSize(4)).unwrap();
    assert!(fft.negacyclic_mul(&[1; 4], &[1; 8]).is_err());
}

/// The backend under wrong sizes: every mismatch is an error, empty batches are empty, and
/// the right inputs still give the right messages (the tiny set is noiseless).
#[test]
fn cpu_backend_under_wrong_sizes() {
    let (client, keys) = tiny_keys();
    let params = *keys.parameters();
    let cpu = Cpu::new(keys.clone(), BlindRotationMode::Fft).unwrap();
    let exact = cpu.with_mode(BlindRotationMode::Exact).unwrap();
    let lut = LookupTable::new(&params, |m| (m * 3 + 1) % 8).unwrap();
    let other_params = Parameters::new(ParameterSpec {
        polynomial_size: PolynomialSize(1024),
        ..tiny_spec()
    })
    .unwrap();
    let wrong_lut = LookupTable::new(&other_params, |m| m).unwrap();
    let mut rng = Csprng::from_seed([4; 32]);
    let big = client.encrypt(5, &mut rng).unwrap();
    let small = client.encrypt_small(5, &mut rng).unwrap();
    let odd = LweCiphertext::trivial(0, LweDimension(3)).unwrap();
    for backend in [&cpu as &dyn Bootstrapper, &exact] {
        assert!(is_dimension_mismatch(&backend.keyswitch(&small)));
        assert!(is_dimension_mismatch(&backend.keyswitch(&odd)));
        assert!(is_dimension_mismatch(&backend.bootstrap(&big, &lut)));
        assert!(is_dimension_mismatch(
            &backend.bootstrap(&small, &wrong_lut)
        ));
        assert!(is_dimension_mismatch(
            &backend.keyswitch_bootstrap(&big, &wrong_lut)
        ));
        assert!(is_dimension_mismatch(
            &backend.keyswitch_bootstrap_batch(&[big.clone(), small.clone()], &lut)
        ));
        assert_eq!(backend.keyswitch_batch(&[]), Ok(vec![]));
        assert_eq!(backend.bootstrap_batch(&[], &lut), Ok(vec![]));
        let out = backend.keyswitch_bootstrap(&big, &lut).unwrap();
        assert_eq!(client.decrypt(&out), Ok(0));
        let out = backend.bootstrap(&small, &lut).unwrap();
        assert_eq!(client.decrypt(&out), Ok(0));
        assert!(client.decrypt(&small).is_err());
        assert!(client.decrypt_small(&big).is_err());
    }
    assert!(is_dimension_mismatch(&keyswitch(
        keys.keyswitch_key(),
        &small
    )));
    assert_eq!(keyswitch(keys.keyswitch_key(), &big), cpu.keyswitch(&big));
    assert!(cpu.blind_rotate(&big, &lut).is_err());
    assert!(cpu.blind_rotate(&small, &wrong_lut).is_err());
}

/// Evaluation keys assembled from parts that disagree with the parameters are refused.
#[test]
fn evaluation_keys_from_mismatched_parts() {
    let (client, keys) = tiny_keys();
    let params = *keys.parameters();
    let other = Parameters::new(ParameterSpec {
        lwe_dimension: LweDimension(9),
        ..tiny_spec()
    })
    .unwrap();
    let fhe_pbs::AnyBootstrapKey::Classic(bsk) = keys.bootstrap_key().clone() else {
        panic!("a classic set")
    };
    let ksk = keys.keyswitch_key().clone();
    assert!(is_dimension_mismatch(&EvaluationKeys::from_parts(
        other,
        bsk.clone(),
        ksk.clone()
    )));
    assert!(EvaluationKeys::from_parts(params, bsk, ksk).is_ok());
    let mut rng = Csprng::from_seed([5; 32]);
    let other_client = ClientKey::generate(other, &mut rng);
    assert!(is_dimension_mismatch(&ClientKey::from_parts(
        params,
        other_client.lwe_secret_key().clone(),
        client.glwe_secret_key().clone(),
    )));
}

/// Secrets in `Debug` and error text: a key's bits would show as a list of 0s and 1s, a
/// seed as its bytes in decimal; neither may appear.
#[test]
fn debug_and_errors_hide_the_secrets() {
    let (client, keys) = tiny_keys();
    let bits = client.lwe_secret_key().as_slice();
    let glwe_bits = client.glwe_secret_key().as_slice();
    let derived_lwe = format!("{bits:?}");
    let derived_glwe = format!("{:?}", &glwe_bits[..16]);
    for text in [
        format!("{client:?}"),
        format!("{:?}", client.lwe_secret_key()),
        format!("{:?}", client.glwe_secret_key()),
        format!("{:?}", client.glwe_secret_key().to_lwe_key()),
        format!("{keys:?}"),
        format!("{:#?}", client),
    ] {
        assert!(
            !text.contains(&derived_lwe[1..derived_lwe.len() - 1]),
            "{text}"
        );
        assert!(
            !text.contains(&derived_glwe[1..derived_glwe.len() - 1]),
            "{text}"
        );
        assert!(
            !text.contains("0, 1") && !text.contains("1, 0") && !text.contains("1, 1"),
            "{text}"
        );
    }
    // The generator: its seed (bytes 171) and state stay hidden.
    let rng = Csprng::from_seed([171; 32]);
    for text in [format!("{rng:?}"), format!("{rng:#?}")] {
        assert!(
            !text.contains("171") && !text.to_lowercase().contains("ab, ab"),
            "{text}"
        );
        assert!(!text.to_lowercase().contains("0xab"), "{text}");
    }
    // Refused key material is not echoed: a distinctive word, in decimal and in hex.
    let secret = 0x5EC2_E7AB_CDEF_1234u64;
    let errors = [
        LweSecretKey::from_bits(vec![0, 1, secret]).unwrap_err(),
        GlweSecretKey::from_bits(vec![1, secret], GlweDimension(1), PolynomialSize(2)).unwrap_err(),
        GlweSecretKey::from_bits(vec![1, 0, 1], GlweDimension(1), PolynomialSize(2)).unwrap_err(),
    ];
    for error in errors {
        for text in [error.to_string(), format!("{error:?}")] {
            assert!(!text.contains(&secret.to_string()), "{text}");
            assert!(
                !text.to_lowercase().contains(&format!("{secret:x}")),
                "{text}"
            );
            assert!(!text.contains("1, 0, 1"), "{text}");
        }
    }
}

/// GPU tests: one backend shared by 8 threads, and a batch that runs out of GPU memory.
#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use fhe_pbs::{Cuda, Engine, MultiGpu};

    /// 8 threads share one `Cuda` for 20 calls each (single ciphertexts and batches of 1, 3,
    /// 17 and 33, key switches and full bootstraps): every key switch equals the CPU's word
    /// for word (it is integer-exact), every bootstrap decrypts to its table's value and to
    /// what the serial run of the same call gave. Then the same with one `MultiGpu` over the
    /// GPU given twice (each batch split, single ciphertexts in turn).
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn eight_threads_share_one_backend() {
        let _lock = crate::kernels::gpu_lock();
        let params = fhe_pbs::PARAM_TEST_INSECURE;
        let mut rng = Csprng::from_seed([8; 32]);
        let client = ClientKey::generate(params, &mut rng);
        let keys = EvaluationKeys::generate(&client, &mut rng);
        let cpu = Cpu::new(keys.clone(), BlindRotationMode::Fft).unwrap();
        let cuda = Cuda::new(&keys, Engine::Auto).unwrap();
        let gpu = std::sync::Arc::clone(cuda.gpu());
        let multi = MultiGpu::on(&[gpu.clone(), gpu], &keys, Engine::Auto).unwrap();
        let lut = LookupTable::new(&params, |m| (5 * m + 3) % 16).unwrap();
        let sizes = [1usize, 3, 17, 33];
        // Each thread's inputs, fixed, and what the serial run gives for them.
        let inputs: Vec<Vec<Vec<(u64, LweCiphertext)>>> = (0..8)
            .map(|_| {
                (0..20)
                    .map(|call| {
                        (0..sizes[call % sizes.len()])
                            .map(|_| {
                                let m = rng.next_u64() % 16;
                                (m, client.encrypt(m, &mut rng).unwrap())
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        for backend in [&cuda as &(dyn Bootstrapper + Sync), &multi] {
            let run = |call: usize, batch: &[(u64, LweCiphertext)]| -> Vec<u64> {
                let cts: Vec<LweCiphertext> = batch.iter().map(|(_, c)| c.clone()).collect();
                if call % 4 == 1 {
                    let out = backend.keyswitch_batch(&cts).unwrap();
                    assert_eq!(out, cpu.keyswitch_batch(&cts).unwrap());
                    out.iter()
                        .map(|c| client.decrypt_small(c).unwrap())
                        .collect()
                } else if call % 4 == 2 {
                    let out = backend.keyswitch_bootstrap(&cts[0], &lut).unwrap();
                    vec![client.decrypt(&out).unwrap()]
                } else {
                    let out = backend.keyswitch_bootstrap_batch(&cts, &lut).unwrap();
                    out.iter().map(|c| client.decrypt(c).unwrap()).collect()
                }
            };
            let serial: Vec<Vec<Vec<u64>>> = inputs
                .iter()
                .map(|calls| calls.iter().enumerate().map(|(i, b)| run(i, b)).collect())
                .collect();
            std::thread::scope(|scope| {
                for (thread, calls) in inputs.iter().enumerate() {
                    let (run, serial) = (&run, &serial);
                    scope.spawn(move || {
                        for (call, batch) in calls.iter().enumerate() {
                            let got = run(call, batch);
                            assert_eq!(
                                got,
                                serial[thread][call],
                                "{}: thread {thread}, call {call}",
                                backend.name()
                            );
                            let expected: Vec<u64> = batch
                                .iter()
                                .take(got.len())
                                .map(|&(m, _)| if call % 4 == 1 { m } else { (5 * m + 3) % 16 })
                                .collect();
                            assert_eq!(
                                got,
                                expected,
                                "{}: thread {thread}, call {call}",
                                backend.name()
                            );
                        }
                    });
                }
            });
        }
    }

    /// Chunk limits at their extremes give the host's results; empty and mixed uploads are
    /// handled.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn chunk_limits_and_uploads_at_the_edges() {
        let _lock = crate::kernels::gpu_lock();
        let params = fhe_pbs::PARAM_TEST_INSECURE;
        let mut rng = Csprng::from_seed([10; 32]);
        let client = ClientKey::generate(params, &mut rng);
        let keys = EvaluationKeys::generate(&client, &mut rng);
        let cuda = Cuda::new(&keys, Engine::Auto).unwrap();
        let cpu = Cpu::new(keys.clone(), BlindRotationMode::Fft).unwrap();
        let lut = LookupTable::new(&params, |m| (m + 7) % 16).unwrap();
        let batch: Vec<LweCiphertext> = (0..37)
            .map(|m| client.encrypt(m % 16, &mut rng).unwrap())
            .collect();
        let expected = cpu.keyswitch_batch(&batch).unwrap();
        for max_chunk in [0, 1, 5, usize::MAX] {
            let limited = cuda.with_max_chunk(max_chunk);
            assert_eq!(
                limited.keyswitch_batch(&batch).unwrap(),
                expected,
                "{max_chunk}"
            );
            let out = limited.keyswitch_bootstrap_batch(&batch, &lut).unwrap();
            for (i, ct) in out.iter().enumerate() {
                assert_eq!(
                    client.decrypt(ct),
                    Ok((i as u64 % 16 + 7) % 16),
                    "{max_chunk}"
                );
            }
        }
        assert_eq!(cuda.keyswitch_bootstrap_batch(&[], &lut), Ok(vec![]));
        let empty = cuda.upload(&[]).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.to_host(), Ok(vec![]));
        let small = client.encrypt_small(3, &mut rng).unwrap();
        let mixed = [batch[0].clone(), small.clone()];
        assert!(is_dimension_mismatch(&cuda.upload(&mixed)));
        assert!(is_dimension_mismatch(
            &cuda.keyswitch_bootstrap_batch(&mixed, &lut)
        ));
        let device = cuda.upload(&[small]).unwrap();
        assert!(is_dimension_mismatch(&cuda.keyswitch_on_device(&device)));
        // Ciphertexts in the memory of another GPU handle are refused, not read.
        let other = Cuda::new(&keys, Engine::Auto).unwrap();
        let elsewhere = other.upload(&batch).unwrap();
        assert!(is_invalid(
            cuda.keyswitch_on_device(&elsewhere),
            "ciphertexts"
        ));
    }

    /// A batch whose device buffers no longer fit (the GPU filled but for 2 MiB, less than
    /// the 4 MB of these 2,000 ciphertexts' key-switch outputs; a chunk that the host's
    /// estimate puts under 1% of the device's memory, as these ciphertexts' 70 MB on an 80 GB
    /// GPU, allocates without reading the free memory first): an error carrying the bytes
    /// requested and free; with the memory back, the same backend gives the right results for
    /// the same batch.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn out_of_memory_mid_batch_is_an_error_and_the_next_call_succeeds() {
        let _lock = crate::kernels::gpu_lock();
        let params = fhe_pbs::PARAM_TEST_INSECURE;
        let mut rng = Csprng::from_seed([9; 32]);
        let client = ClientKey::generate(params, &mut rng);
        let keys = EvaluationKeys::generate(&client, &mut rng);
        let cuda = Cuda::new(&keys, Engine::Auto).unwrap();
        let lut = LookupTable::new(&params, |m| 15 - m).unwrap();
        let messages: Vec<u64> = (0..2000).map(|i| i % 16).collect();
        let batch: Vec<LweCiphertext> = messages
            .iter()
            .map(|&m| client.encrypt(m, &mut rng).unwrap())
            .collect();
        // A small batch first, so that the backend is warm (kernels loaded, buffers cached).
        let warm = cuda.keyswitch_bootstrap_batch(&batch[..4], &lut).unwrap();
        assert_eq!(client.decrypt(&warm[3]), Ok(12));
        let ballast = crate::kernels::fill_device_memory(cuda.gpu(), 2 << 20);
        match cuda.keyswitch_bootstrap_batch(&batch, &lut) {
            Err(Error::Gpu(failure)) => match failure.inner() {
                error @ kernels::GpuError::OutOfMemory { requested, .. } => {
                    crate::kernels::assert_out_of_memory(error);
                    let text = failure.to_string();
                    assert!(text.contains(&requested.to_string()), "{text}");
                }
                other => panic!("expected OutOfMemory, got {other}"),
            },
            other => panic!(
                "expected an out-of-memory error, got {:?}",
                other.map(|v| v.len())
            ),
        }
        drop(ballast);
        let out = cuda.keyswitch_bootstrap_batch(&batch, &lut).unwrap();
        let decrypted: Vec<u64> = out.iter().map(|c| client.decrypt(c).unwrap()).collect();
        let expected: Vec<u64> = messages.iter().map(|m| 15 - m).collect();
        assert_eq!(decrypted, expected);
        // And device-resident batches on the same backend.
        let device = cuda.upload(&batch).unwrap();
        let resident = cuda.keyswitch_bootstrap_on_device(&device, &lut).unwrap();
        assert_eq!(resident.to_host().unwrap(), out);
    }
}

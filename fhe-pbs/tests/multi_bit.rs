//! The multi-bit bootstrap on the CPU: parameter checks, the key's GGSW patterns, the exact
//! blind rotation against its definition (noiseless keys: exactly `X^{-rho} LUT`), every
//! message in both modes for g = 2, 3 and 4, the FFT mode's distance to the exact one, and
//! keys of the wrong kind refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fhe_pbs::modswitch::{modulus_switch, multi_bit_degrees};
use fhe_pbs::multi_bit_key::group_cleartext;
use fhe_pbs::polynomial::multiply_by_monomial;
use fhe_pbs::{
    AnyBootstrapKey, BlindRotationMode, BootstrapKey, Bootstrapper, ClientKey, Cpu, Csprng,
    DecompositionParams, Error, EvaluationKeys, GlweCiphertext, GlweDimension, GroupingFactor,
    LookupTable, LweCiphertext, LweDimension, ModulusSwitchType, MultiBitBootstrapKey,
    NoiseDistribution, PARAM_GPU_MULTI_BIT_GROUP_3_MESSAGE_2_CARRY_2,
    PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2, PARAM_TEST_INSECURE, ParameterSpec, Parameters,
    PbsKind, PolynomialSize,
};
use proptest::prelude::*;

/// The insecure test set's shape with `n = 252` (a multiple of 2, 3 and 4), the standard
/// switch, multi-bit with grouping factor `g`.
fn test_set(g: usize) -> Parameters {
    let spec = ParameterSpec {
        lwe_dimension: LweDimension(252),
        modulus_switch: ModulusSwitchType::Standard,
        ..*PARAM_TEST_INSECURE.spec()
    };
    Parameters::new_multi_bit(spec, GroupingFactor(g)).unwrap()
}

fn signed_distance(a: u64, b: u64) -> u64 {
    (a.wrapping_sub(b) as i64).unsigned_abs()
}

/// `rho = (b~ - sum over groups of d_t) mod 2N`, `t` the pattern of the group's key bits: the
/// rotation the multi-bit blind rotation applies to the table.
fn multi_bit_rotation(client: &ClientKey, small: &LweCiphertext, g: usize) -> usize {
    let params = client.parameters();
    let n = params.polynomial_size();
    let two_n = 2 * n.0;
    let (body, mask) = small.as_slice().split_last().unwrap();
    let bits = client.lwe_secret_key().as_slice();
    let mut rho = modulus_switch(*body, n).unwrap();
    for (words, key_bits) in mask.chunks_exact(g).zip(bits.chunks_exact(g)) {
        let pattern = key_bits.iter().fold(0, |t, &b| (t << 1) | b as usize);
        let degrees = multi_bit_degrees(words, n).unwrap();
        let d = if pattern == 0 {
            0
        } else {
            degrees[pattern - 1]
        };
        rho = (rho + two_n - d) % two_n;
    }
    rho
}

#[test]
fn multi_bit_sets_are_checked() {
    let spec = *test_set(2).spec();
    for g in [0, 1, 5, 64] {
        assert!(matches!(
            Parameters::new_multi_bit(spec, GroupingFactor(g)),
            Err(Error::InvalidParameter {
                name: "grouping_factor",
                ..
            })
        ));
    }
    let odd = ParameterSpec {
        lwe_dimension: LweDimension(253),
        ..spec
    };
    assert!(matches!(
        Parameters::new_multi_bit(odd, GroupingFactor(2)),
        Err(Error::InvalidParameter {
            name: "lwe_dimension",
            ..
        })
    ));
    let centered = ParameterSpec {
        modulus_switch: ModulusSwitchType::CenteredMeanNoiseReduction,
        ..spec
    };
    assert!(matches!(
        Parameters::new_multi_bit(centered, GroupingFactor(2)),
        Err(Error::InvalidParameter {
            name: "modulus_switch",
            ..
        })
    ));
    for (set, g, log2_p_fail) in [
        (PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2, 4, -134.345),
        (PARAM_GPU_MULTI_BIT_GROUP_3_MESSAGE_2_CARRY_2, 3, -128.29),
    ] {
        assert_eq!(
            Parameters::new_multi_bit(*set.spec(), GroupingFactor(g)).unwrap(),
            set
        );
        assert_eq!(set.pbs_kind(), PbsKind::MultiBit(GroupingFactor(g)));
        assert_eq!(set.log2_failure_probability(), Some(log2_p_fail));
        assert_ne!(
            Parameters::new(*set.spec()).unwrap(),
            set,
            "classic differs"
        );
        assert_eq!(
            Parameters::new(*set.spec())
                .unwrap()
                .log2_failure_probability(),
            None
        );
    }
    assert_eq!(PARAM_TEST_INSECURE.pbs_kind(), PbsKind::Classic);
}

#[test]
fn group_patterns_select_exactly_the_key_bits() {
    for g in 2..=4usize {
        for bits_index in 0..1usize << g {
            let bits: Vec<u64> = (0..g)
                .map(|j| ((bits_index >> (g - 1 - j)) & 1) as u64)
                .collect();
            for pattern in 0..1usize << g {
                assert_eq!(
                    group_cleartext(pattern, &bits),
                    u64::from(pattern == bits_index),
                    "g = {g}, bits {bits:?}, pattern {pattern}"
                );
            }
        }
    }
}

/// Each GGSW of a generated key decrypts (its last row of level 1) to `cleartext * 2^(64 - b)`.
#[test]
fn generated_key_encrypts_the_group_patterns() {
    let params = test_set(3);
    let mut rng = Csprng::from_seed([31; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let AnyBootstrapKey::MultiBit(key) = keys.bootstrap_key() else {
        panic!("a multi-bit set gives a multi-bit key");
    };
    let (k, n) = (params.glwe_dimension().0, params.polynomial_size().0);
    let decomposition = params.pbs_decomposition();
    let levels = decomposition.level_count().0;
    let factor = 1u64 << (64 - decomposition.base_log().0);
    let row_len = (k + 1) * n;
    let bits = client.lwe_secret_key().as_slice();
    assert_eq!(key.as_slice().len(), 252 / 3 * 8 * key.ggsw_len());
    for group in [0, 1, 83] {
        let ggsws = key.group(group).unwrap();
        for (pattern, ggsw) in ggsws.chunks_exact(key.ggsw_len()).enumerate() {
            // Level 1 is the last level matrix; its body row is the last row.
            let row = &ggsw[((levels - 1) * (k + 1) + k) * row_len..][..row_len];
            let glwe = GlweCiphertext::from_vec(
                row.to_vec(),
                params.glwe_dimension(),
                params.polynomial_size(),
            )
            .unwrap();
            let phase = client.glwe_secret_key().phase(&glwe).unwrap();
            let expected = group_cleartext(pattern, &bits[3 * group..3 * group + 3]) * factor;
            assert!(
                signed_distance(phase[0], expected) < 1 << 30,
                "pattern {pattern}"
            );
            assert!(phase[1..].iter().all(|&c| signed_distance(c, 0) < 1 << 30));
        }
    }
    assert!(key.group(84).is_err());
}

/// Noiseless keys and a decomposition of all 64 bits: the exact multi-bit blind rotation has
/// no error at all, so its phase is exactly `X^{-rho} LUT` with `rho` from the definition.
#[test]
fn exact_multi_bit_blind_rotation_is_exact_without_noise_or_rounding() {
    let noiseless = NoiseDistribution::Gaussian { std: 0.0 };
    for g in 2..=4 {
        let params = Parameters::new_multi_bit(
            ParameterSpec {
                lwe_dimension: LweDimension(24),
                glwe_dimension: GlweDimension(2),
                polynomial_size: PolynomialSize(512),
                lwe_noise: noiseless,
                glwe_noise: noiseless,
                pbs_decomposition: DecompositionParams::new(16, 4).unwrap(),
                ks_decomposition: DecompositionParams::new(4, 4).unwrap(),
                plaintext_modulus: 8,
                modulus_switch: ModulusSwitchType::Standard,
            },
            GroupingFactor(g),
        )
        .unwrap();
        let mut rng = Csprng::from_seed([40 + g as u8; 32]);
        let client = ClientKey::generate(params, &mut rng);
        let keys = EvaluationKeys::generate(&client, &mut rng);
        let exact = Cpu::new(keys, BlindRotationMode::Exact).unwrap();
        let lut = LookupTable::new(&params, |m| (m * 5 + 3) % 8).unwrap();
        for trial in 0..3 {
            let mut words = vec![0u64; 25];
            rng.fill_uniform(&mut words);
            if trial == 0 {
                // Ties and the top of the torus in every group.
                words[..24].copy_from_slice(&[u64::MAX, 1 << 53, 0, 3 << 52].repeat(6));
            }
            let ct = LweCiphertext::from_vec(words).unwrap();
            let rho = multi_bit_rotation(&client, &ct, g);
            let acc = exact.blind_rotate(&ct, &lut).unwrap();
            let phase = client.glwe_secret_key().phase(&acc).unwrap();
            let mut expected = vec![0u64; 512];
            multiply_by_monomial(&mut expected, lut.polynomial(), (1024 - rho) % 1024).unwrap();
            assert_eq!(phase, expected, "g = {g}, trial {trial}");
        }
    }
}

fn check_every_message(params: Parameters, seed: u8) {
    let mut rng = Csprng::from_seed([seed; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let fft = Cpu::new(keys, BlindRotationMode::Fft).unwrap();
    let exact = fft.with_mode(BlindRotationMode::Exact).unwrap();
    let p = params.plaintext_modulus();
    let table: Vec<u64> = (0..p).map(|m| (7 * m + 3) % p).collect();
    let lut = LookupTable::from_values(&params, &table).unwrap();
    let inputs: Vec<LweCiphertext> = (0..p)
        .map(|m| client.encrypt(m, &mut rng).unwrap())
        .collect();
    let from_fft = fft.keyswitch_bootstrap_batch(&inputs, &lut).unwrap();
    let from_exact = exact.keyswitch_bootstrap_batch(&inputs, &lut).unwrap();
    let mut max_distance = 0;
    for (m, (f, e)) in from_fft.iter().zip(&from_exact).enumerate() {
        assert_eq!(client.decrypt(f).unwrap(), table[m], "fft, m = {m}");
        assert_eq!(client.decrypt(e).unwrap(), table[m], "exact, m = {m}");
        max_distance = max_distance.max(signed_distance(
            client.phase(f).unwrap(),
            client.phase(e).unwrap(),
        ));
    }
    println!(
        "{:?}: max |phase_fft - phase_exact| = 2^{:.1}, delta / 2 = 2^{:.0}",
        params.pbs_kind(),
        (max_distance as f64).log2(),
        ((params.delta() / 2) as f64).log2()
    );
    assert!(max_distance < (params.delta() / 2) >> 6);
}

#[test]
fn every_message_bootstraps_for_each_grouping_factor() {
    for g in 2..=4 {
        check_every_message(test_set(g), 50 + g as u8);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]
    #[test]
    fn random_tables_bootstrap(
        table in proptest::collection::vec(0u64..16, 16),
        m in 0u64..16,
        g in 2usize..=4,
        seed in any::<[u8; 32]>(),
    ) {
        let params = test_set(g);
        let mut rng = Csprng::from_seed(seed);
        let client = ClientKey::generate(params, &mut rng);
        let cpu = Cpu::new(EvaluationKeys::generate(&client, &mut rng), BlindRotationMode::Fft)
            .unwrap();
        let lut = LookupTable::from_values(&params, &table).unwrap();
        let out = cpu.keyswitch_bootstrap(&client.encrypt(m, &mut rng).unwrap(), &lut).unwrap();
        prop_assert_eq!(client.decrypt(&out).unwrap(), table[m as usize]);
    }
}

#[test]
fn keys_of_the_wrong_kind_are_refused() {
    let multi = test_set(2);
    let classic = Parameters::new(*multi.spec()).unwrap();
    let mut rng = Csprng::from_seed([60; 32]);
    let client = ClientKey::generate(multi, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let ksk = keys.keyswitch_key().clone();
    let AnyBootstrapKey::MultiBit(multi_key) = keys.bootstrap_key().clone() else {
        panic!("a multi-bit key");
    };
    let refused = EvaluationKeys::from_parts(classic, multi_key.clone(), ksk.clone());
    assert!(matches!(
        refused,
        Err(Error::InvalidParameter {
            name: "bootstrap key",
            ..
        })
    ));
    // A key of the same shape with grouping factor 4 is a different kind.
    let other_g = MultiBitBootstrapKey::from_vec(
        vec![0; 252 / 4 * 16 * multi_key.ggsw_len()],
        LweDimension(252),
        GroupingFactor(4),
        multi.glwe_dimension(),
        multi.polynomial_size(),
        multi.pbs_decomposition(),
    )
    .unwrap();
    assert!(EvaluationKeys::from_parts(multi, other_g, ksk.clone()).is_err());
    let classic_key = BootstrapKey::generate(
        client.lwe_secret_key(),
        client.glwe_secret_key(),
        multi.pbs_decomposition(),
        multi.glwe_noise(),
        &mut rng,
    )
    .unwrap();
    assert!(EvaluationKeys::from_parts(multi, classic_key, ksk.clone()).is_err());
    let rebuilt = EvaluationKeys::from_parts(multi, multi_key, ksk).unwrap();
    assert_eq!(rebuilt.bootstrap_key(), keys.bootstrap_key());
}

#[test]
fn raw_multi_bit_keys_are_checked() {
    let params = test_set(2);
    let (k, n, d) = (
        params.glwe_dimension(),
        params.polynomial_size(),
        params.pbs_decomposition(),
    );
    let from = |len: usize, lwe: usize, g: usize| {
        MultiBitBootstrapKey::from_vec(vec![0; len], LweDimension(lwe), GroupingFactor(g), k, n, d)
    };
    let ggsw_len = 2 * 2 * 1024;
    assert!(from(2 * 4 * ggsw_len, 4, 2).is_ok());
    assert!(matches!(
        from(2 * 4 * ggsw_len - 1, 4, 2),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(from(0, 0, 2), Err(Error::InvalidParameter { .. })));
    assert!(matches!(from(0, 5, 2), Err(Error::InvalidParameter { .. })));
    assert!(matches!(from(0, 4, 1), Err(Error::InvalidParameter { .. })));
    assert!(matches!(
        from(0, 4, usize::MAX),
        Err(Error::InvalidParameter { .. })
    ));
    // Dimensions whose product overflows: an error, never a panic.
    assert!(matches!(
        from(0, usize::MAX - usize::MAX % 4, 4),
        Err(Error::SizeOverflow { .. })
    ));
    assert!(matches!(
        MultiBitBootstrapKey::from_vec(
            vec![],
            LweDimension(4),
            GroupingFactor(2),
            GlweDimension(usize::MAX),
            n,
            d
        ),
        Err(Error::SizeOverflow { .. })
    ));
    assert!(multi_bit_degrees(&[1, 2, 3, 4, 5], n).is_err());
    assert!(multi_bit_degrees(&[1], n).is_err());
    assert_eq!(multi_bit_degrees(&[0, 0], n).unwrap(), vec![0, 0, 0]);
}

/// tfhe-rs's GPU multi-bit sets (g = 4 and g = 3) on the CPU in FFT mode: a few messages
/// through key switch and bootstrap.
#[test]
fn published_multi_bit_sets_bootstrap() {
    for (params, seed) in [
        (PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2, 80),
        (PARAM_GPU_MULTI_BIT_GROUP_3_MESSAGE_2_CARRY_2, 81),
    ] {
        let start = std::time::Instant::now();
        let mut rng = Csprng::from_seed([seed; 32]);
        let client = ClientKey::generate(params, &mut rng);
        let keys = EvaluationKeys::generate(&client, &mut rng);
        let keygen = start.elapsed();
        let cpu = Cpu::new(keys, BlindRotationMode::Fft).unwrap();
        let lut = LookupTable::new(&params, |m| (m * m + 1) % 16).unwrap();
        let start = std::time::Instant::now();
        for m in [0, 7, 15] {
            let out = cpu
                .keyswitch_bootstrap(&client.encrypt(m, &mut rng).unwrap(), &lut)
                .unwrap();
            assert_eq!(client.decrypt(&out).unwrap(), (m * m + 1) % 16);
        }
        println!(
            "{:?}: keys {keygen:.2?}, 3 KS+PBS {:.2?}",
            params.pbs_kind(),
            start.elapsed()
        );
    }
}

//! Full bootstraps: every message and random tables on the test set and on
//! `PARAM_MESSAGE_2_CARRY_2`, in both modes; the phase distance between the FFT and exact
//! modes; an exactness check of the whole blind rotation; error paths.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;
use std::time::Instant;

use fhe_pbs::modswitch::modulus_switch_lwe;
use fhe_pbs::polynomial::multiply_by_monomial;
use fhe_pbs::{
    BlindRotationMode, Bootstrapper, ClientKey, Cpu, Csprng, DecompositionParams, Error,
    EvaluationKeys, GlweDimension, LookupTable, LweCiphertext, LweDimension, ModulusSwitchType,
    NoiseDistribution, PARAM_MESSAGE_2_CARRY_2, PARAM_TEST_INSECURE, ParameterSpec, Parameters,
    PolynomialSize,
};
use proptest::prelude::*;

struct Setup {
    client: ClientKey,
    exact: Cpu,
    fft: Cpu,
}

fn setup(params: Parameters, seed: u8) -> Setup {
    let mut rng = Csprng::from_seed([seed; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let fft = Cpu::new(keys, BlindRotationMode::Fft).unwrap();
    let exact = fft.with_mode(BlindRotationMode::Exact).unwrap();
    Setup { client, exact, fft }
}

fn test_set() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| setup(PARAM_TEST_INSECURE, 1))
}

/// `(b~ - sum_i a~_i s_i) mod 2N`: the rotation the blind rotation should apply.
fn switched_phase(client: &ClientKey, small: &LweCiphertext) -> usize {
    let n = client.parameters().polynomial_size();
    let switched = modulus_switch_lwe(small, n, client.parameters().modulus_switch()).unwrap();
    let two_n = 2 * n.0;
    let (body, mask) = switched.split_last().unwrap();
    let dot: usize = mask
        .iter()
        .zip(client.lwe_secret_key().as_slice())
        .map(|(&a, &s)| a * s as usize)
        .sum();
    (body + two_n - dot % two_n) % two_n
}

fn signed_distance(a: u64, b: u64) -> u64 {
    (a.wrapping_sub(b) as i64).unsigned_abs()
}

/// Generic over the backend, as the CUDA backend's tests will be.
fn check_all_messages<B: Bootstrapper>(backend: &B, client: &ClientKey, table: &[u64], seed: u8) {
    let params = *backend.parameters();
    let p = params.plaintext_modulus();
    let lut = LookupTable::from_values(&params, table).unwrap();
    let mut rng = Csprng::from_seed([seed; 32]);
    let inputs: Vec<LweCiphertext> = (0..p)
        .map(|m| client.encrypt(m, &mut rng).unwrap())
        .collect();
    let outputs = backend.keyswitch_bootstrap_batch(&inputs, &lut).unwrap();
    for (m, out) in outputs.iter().enumerate() {
        assert_eq!(out.dimension(), params.big_lwe_dimension());
        assert_eq!(
            client.decrypt(out).unwrap(),
            table[m],
            "{}: f({m}) with table {table:?}",
            backend.name()
        );
    }
}

#[test]
fn test_set_bootstraps_every_message_in_both_modes() {
    let s = test_set();
    let table: Vec<u64> = (0..16).map(|m| (5 * m + 7) % 16).collect();
    check_all_messages(&s.fft, &s.client, &table, 2);
    check_all_messages(&s.exact, &s.client, &table, 3);
    // Identity and a constant, from the small key directly (bootstrap without key switch).
    let params = PARAM_TEST_INSECURE;
    let identity = LookupTable::new(&params, |m| m).unwrap();
    let constant = LookupTable::new(&params, |_| 11).unwrap();
    let mut rng = Csprng::from_seed([4; 32]);
    let inputs: Vec<LweCiphertext> = (0..16)
        .map(|m| s.client.encrypt_small(m, &mut rng).unwrap())
        .collect();
    let ids = s.fft.bootstrap_batch(&inputs, &identity).unwrap();
    let consts = s.fft.bootstrap_batch(&inputs, &constant).unwrap();
    for m in 0..16 {
        assert_eq!(s.client.decrypt(&ids[m]).unwrap(), m as u64);
        assert_eq!(s.client.decrypt(&consts[m]).unwrap(), 11);
    }
    // The batch equals the single calls, bit for bit.
    assert_eq!(s.fft.bootstrap(&inputs[5], &identity).unwrap(), ids[5]);
    let switched = s
        .fft
        .keyswitch_batch(&[s.client.encrypt(9, &mut rng).unwrap()])
        .unwrap();
    assert_eq!(s.client.decrypt_small(&switched[0]).unwrap(), 9);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn random_tables_on_the_test_set(
        table in proptest::collection::vec(0u64..16, 16),
        m in 0u64..16,
        seed in any::<[u8; 32]>(),
        exact in any::<bool>(),
    ) {
        let s = test_set();
        let mut rng = Csprng::from_seed(seed);
        let lut = LookupTable::from_values(&PARAM_TEST_INSECURE, &table).unwrap();
        let ct = s.client.encrypt(m, &mut rng).unwrap();
        let backend = if exact { &s.exact } else { &s.fft };
        let out = backend.keyswitch_bootstrap(&ct, &lut).unwrap();
        prop_assert_eq!(s.client.decrypt(&out).unwrap(), table[m as usize]);
    }
}

#[test]
fn fast_and_exact_blind_rotations_agree() {
    // Same inputs through both modes: the FFT result stays within a tiny distance of the exact
    // one, both on the extracted LWE phase and on every coefficient of the GLWE phase.
    let s = test_set();
    let params = PARAM_TEST_INSECURE;
    let delta = params.delta();
    let mut rng = Csprng::from_seed([6; 32]);
    let table: Vec<u64> = (0..16).map(|m| (m * m + 1) % 16).collect();
    let lut = LookupTable::from_values(&params, &table).unwrap();
    let glwe_key = s.client.glwe_secret_key();
    let (mut max_lwe, mut max_glwe) = (0u64, 0u64);
    for m in 0..16 {
        let ct = s.client.encrypt_small(m, &mut rng).unwrap();
        let acc_fft = s.fft.blind_rotate(&ct, &lut).unwrap();
        let acc_exact = s.exact.blind_rotate(&ct, &lut).unwrap();
        let phase_fft = glwe_key.phase(&acc_fft).unwrap();
        let phase_exact = glwe_key.phase(&acc_exact).unwrap();
        for (&x, &y) in phase_fft.iter().zip(&phase_exact) {
            max_glwe = max_glwe.max(signed_distance(x, y));
        }
        let out_fft = s.fft.bootstrap(&ct, &lut).unwrap();
        let out_exact = s.exact.bootstrap(&ct, &lut).unwrap();
        let d = signed_distance(
            s.client.phase(&out_fft).unwrap(),
            s.client.phase(&out_exact).unwrap(),
        );
        max_lwe = max_lwe.max(d);
        assert_eq!(s.client.decrypt(&out_fft).unwrap(), table[m as usize]);
        assert_eq!(s.client.decrypt(&out_exact).unwrap(), table[m as usize]);
    }
    println!(
        "test set: max |phase_fft - phase_exact| = 2^{:.1} (LWE), 2^{:.1} (all GLWE \
         coefficients); delta / 2 = 2^{:.0}",
        (max_lwe as f64).log2(),
        (max_glwe as f64).log2(),
        ((delta / 2) as f64).log2()
    );
    // Measured: 2^48.5 (LWE) and 2^50.0 (GLWE) with these seeds, against delta / 2 = 2^58.
    assert!(
        max_lwe < (delta / 2) >> 6,
        "LWE distance 2^{:.1}",
        (max_lwe as f64).log2()
    );
    assert!(
        max_glwe < (delta / 2) >> 6,
        "GLWE distance 2^{:.1}",
        (max_glwe as f64).log2()
    );
}

#[test]
fn param_message_2_carry_2_in_both_modes() {
    let start = Instant::now();
    let s = setup(PARAM_MESSAGE_2_CARRY_2, 7);
    let keygen = start.elapsed();
    let params = PARAM_MESSAGE_2_CARRY_2;
    let table: Vec<u64> = (0..16).map(|m| (3 * m + 2) % 16).collect();
    let start = Instant::now();
    check_all_messages(&s.fft, &s.client, &table, 8);
    let fft_time = start.elapsed();

    // One ciphertext in exact mode, compared with the FFT mode.
    let lut = LookupTable::from_values(&params, &table).unwrap();
    let mut rng = Csprng::from_seed([9; 32]);
    let ct = s.client.encrypt(13, &mut rng).unwrap();
    let small = s.exact.keyswitch(&ct).unwrap();
    assert_eq!(
        small,
        s.fft.keyswitch(&ct).unwrap(),
        "the key switch is exact in both"
    );
    let start = Instant::now();
    let exact = s.exact.bootstrap(&small, &lut).unwrap();
    let exact_time = start.elapsed();
    let fast = s.fft.bootstrap(&small, &lut).unwrap();
    assert_eq!(s.client.decrypt(&exact).unwrap(), table[13]);
    assert_eq!(s.client.decrypt(&fast).unwrap(), table[13]);
    let distance = signed_distance(
        s.client.phase(&fast).unwrap(),
        s.client.phase(&exact).unwrap(),
    );
    println!(
        "PARAM_MESSAGE_2_CARRY_2: keys {keygen:.2?}, 16 KS+PBS (fft) {fft_time:.2?}, one PBS \
         (exact) {exact_time:.2?}; |phase_fft - phase_exact| = 2^{:.1}, delta / 2 = 2^58",
        (distance as f64).log2()
    );
    assert!(
        distance < (params.delta() / 2) >> 6,
        "distance 2^{:.1}",
        (distance as f64).log2()
    );
}

/// A caller-defined set with `k = 2`, noiseless keys and a decomposition of all 64 bits: then
/// the exact blind rotation has no error at all, and its phase is exactly `X^{-rho} LUT`.
#[test]
fn exact_blind_rotation_is_exact_without_noise_or_rounding() {
    let noiseless = NoiseDistribution::Gaussian { std: 0.0 };
    let params = Parameters::new(ParameterSpec {
        lwe_dimension: LweDimension(24),
        glwe_dimension: GlweDimension(2),
        polynomial_size: PolynomialSize(512),
        lwe_noise: noiseless,
        glwe_noise: noiseless,
        pbs_decomposition: DecompositionParams::new(16, 4).unwrap(),
        ks_decomposition: DecompositionParams::new(4, 4).unwrap(),
        plaintext_modulus: 8,
        modulus_switch: ModulusSwitchType::Standard,
    })
    .unwrap();
    let s = setup(params, 10);
    let lut = LookupTable::new(&params, |m| (m + 3) % 8).unwrap();
    let mut rng = Csprng::from_seed([11; 32]);
    let n = params.polynomial_size().0;
    for _ in 0..6 {
        // Arbitrary phases, not only encodings of messages.
        let ct = s
            .client
            .lwe_secret_key()
            .encrypt(rng.next_u64(), noiseless, &mut rng)
            .unwrap();
        let rho = switched_phase(&s.client, &ct);
        let mut expected = vec![0u64; n];
        multiply_by_monomial(&mut expected, lut.polynomial(), 2 * n - rho).unwrap();
        let acc = s.exact.blind_rotate(&ct, &lut).unwrap();
        assert_eq!(s.client.glwe_secret_key().phase(&acc).unwrap(), expected);
        let out = s.exact.bootstrap(&ct, &lut).unwrap();
        assert_eq!(s.client.phase(&out).unwrap(), expected[0]);
        // The FFT mode is close.
        let acc = s.fft.blind_rotate(&ct, &lut).unwrap();
        let phase = s.client.glwe_secret_key().phase(&acc).unwrap();
        let max = phase
            .iter()
            .zip(&expected)
            .map(|(&x, &y)| signed_distance(x, y))
            .max()
            .unwrap();
        assert!(max < 1 << 48, "fft distance 2^{:.1}", (max as f64).log2());
    }
}

#[test]
fn glwe_dimension_two_bootstraps() {
    let params = Parameters::new(ParameterSpec {
        lwe_dimension: LweDimension(64),
        glwe_dimension: GlweDimension(2),
        polynomial_size: PolynomialSize(512),
        lwe_noise: NoiseDistribution::TUniform { bound_log2: 30 },
        glwe_noise: NoiseDistribution::TUniform { bound_log2: 10 },
        pbs_decomposition: DecompositionParams::new(15, 2).unwrap(),
        ks_decomposition: DecompositionParams::new(3, 5).unwrap(),
        plaintext_modulus: 8,
        modulus_switch: ModulusSwitchType::Standard,
    })
    .unwrap();
    let s = setup(params, 12);
    let table = [3u64, 1, 4, 1, 5, 2, 6, 5];
    check_all_messages(&s.fft, &s.client, &table, 13);
    check_all_messages(&s.exact, &s.client, &table, 14);
}

#[test]
fn error_paths() {
    let s = test_set();
    let params = PARAM_TEST_INSECURE;
    let mut rng = Csprng::from_seed([15; 32]);
    let big = s.client.encrypt(1, &mut rng).unwrap();
    let small = s.client.encrypt_small(1, &mut rng).unwrap();
    let lut = LookupTable::new(&params, |m| m).unwrap();
    for backend in [&s.fft, &s.exact] {
        assert!(matches!(
            backend.bootstrap(&big, &lut),
            Err(Error::DimensionMismatch {
                expected: 256,
                got: 1024,
                ..
            })
        ));
        assert!(matches!(
            backend.keyswitch(&small),
            Err(Error::DimensionMismatch {
                expected: 1024,
                got: 256,
                ..
            })
        ));
        assert!(backend.keyswitch_bootstrap(&small, &lut).is_err());
        assert!(
            backend
                .bootstrap_batch(&[small.clone(), big.clone()], &lut)
                .is_err()
        );
        assert!(
            backend
                .keyswitch_batch(&[big.clone(), small.clone()])
                .is_err()
        );
        assert!(
            backend
                .keyswitch_bootstrap_batch(std::slice::from_ref(&small), &lut)
                .is_err()
        );
        assert!(backend.bootstrap_batch(&[], &lut).unwrap().is_empty());
        // A table made for another polynomial size.
        let other = LookupTable::new(&PARAM_MESSAGE_2_CARRY_2, |m| m).unwrap();
        assert!(matches!(
            backend.bootstrap(&small, &other),
            Err(Error::DimensionMismatch {
                expected: 1024,
                got: 2048,
                ..
            })
        ));
    }
    assert_eq!(
        s.client.encrypt(16, &mut rng),
        Err(Error::MessageOutOfRange {
            message: 16,
            modulus: 16
        })
    );
    assert!(s.client.encrypt_small(99, &mut rng).is_err());
    assert!(s.client.decrypt(&small).is_err());
    assert!(s.client.decrypt_small(&big).is_err());
    assert!(matches!(
        LookupTable::new(&params, |m| m + 1),
        Err(Error::LutOutputOutOfRange {
            input: 15,
            output: 16,
            modulus: 16
        })
    ));
    assert!(LookupTable::from_values(&params, &[1, 2, 3]).is_err());
    // Keys assembled from mismatched parts.
    let keys = s.fft.keys();
    assert!(
        EvaluationKeys::from_parts(
            PARAM_MESSAGE_2_CARRY_2,
            keys.bootstrap_key().clone(),
            keys.keyswitch_key().clone()
        )
        .is_err()
    );
    let rebuilt = EvaluationKeys::from_parts(
        params,
        keys.bootstrap_key().clone(),
        keys.keyswitch_key().clone(),
    )
    .unwrap();
    assert_eq!(rebuilt.bootstrap_key(), keys.bootstrap_key());
}

#[test]
fn secrets_stay_out_of_debug_output() {
    let s = test_set();
    let text = format!(
        "{:?} {:?} {:?} {:?}",
        s.client,
        s.client.lwe_secret_key(),
        s.client.glwe_secret_key(),
        Csprng::from_seed([1; 32])
    );
    assert!(
        !text.contains("[0, 1") && !text.contains("[1, 0") && !text.contains("bits"),
        "{text}"
    );
    assert!(text.len() < 2000, "{text}");
    let keys = format!("{:?}", s.fft.keys());
    assert!(
        keys.len() < 2000 && keys.contains("bootstrap_key_words"),
        "{keys}"
    );
    for text in [
        format!("{:?}", s.fft),
        format!("{:?}", s.fft.keys().bootstrap_key()),
        format!("{:?}", s.fft.keys().keyswitch_key()),
    ] {
        assert!(text.len() < 2000, "{text}");
    }
    assert!(s.fft.name().starts_with("cpu (fft"));
    assert!(s.exact.name().starts_with("cpu (exact"));
}

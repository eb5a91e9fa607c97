//! The bootstrap's output noise against the standard TFHE formula for binary keys.
//!
//! Each CMux of the blind rotation adds (see the crate docs for the derivation)
//!
//! * `(k + 1) l N E[d^2] V_bsk`: the digit polynomials (`E[d^2] = (B^2 + 2) / 12`) times the
//!   bootstrap key's noise, and
//! * when the key bit `s_i` is 1, `(1 + |S|) V_round`: the decomposition's rounding error
//!   `V_round = (2^(2 (64 - b l)) - 1) / 12` on the `k + 1` polynomials, times `(1, -S)`
//!   (`|S|` the GLWE key's Hamming weight).
//!
//! CMuxes with `a~_i = 0` are skipped by the implementation and add nothing. The test sums
//! these terms for each input (it knows the keys), runs the exact blind rotation, and compares
//! with the empirical variance of all `N` coefficients of the accumulator's phase error
//! (`phase - X^{-rho} LUT`), over several bootstraps.
//!
//! The coefficients of one accumulator are far from independent: the binary key has mean 1/2,
//! so about half of the rounding term is a component shared by neighbouring coefficients. One
//! bootstrap is therefore worth only a few samples, and the estimate needs tens of bootstraps
//! (with 64 on the test set the ratio measured / predicted came out at 0.999; with 4 it
//! ranged from 0.9 to 1.5). Margin: the ratio must lie in `[2/3, 3/2]` (the issue asked for
//! a factor 2 at most). Measured with these seeds: 0.982 (test set, 32 bootstraps), 0.985
//! (sigma_glwe 2^-40, 8 bootstraps) and 1.027 (two levels, 4 bootstraps); `--nocapture` prints them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fhe_pbs::modswitch::modulus_switch_lwe;
use fhe_pbs::polynomial::multiply_by_monomial;
use fhe_pbs::{
    BlindRotationMode, ClientKey, Cpu, Csprng, DecompositionParams, EvaluationKeys, LookupTable,
    NoiseDistribution, PARAM_TEST_INSECURE, ParameterSpec, Parameters,
};

fn measure(params: Parameters, seed: u8, bootstraps: usize) -> (f64, f64) {
    let mut rng = Csprng::from_seed([seed; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let exact = Cpu::new(keys, BlindRotationMode::Exact).unwrap();
    let lut = LookupTable::new(&params, |m| (m * 7 + 2) % params.plaintext_modulus()).unwrap();

    let n = params.polynomial_size().0;
    let k = params.glwe_dimension().0;
    let pbs = params.pbs_decomposition();
    let (b, l) = (pbs.base_log().0 as i32, pbs.level_count().0 as f64);
    let digit_second_moment = (2f64.powi(2 * b) + 2.0) / 12.0;
    let v_bsk = params.glwe_noise().variance();
    let dropped = 64 - pbs.base_log().0 * pbs.level_count().0;
    let v_round = (2f64.powi(2 * dropped as i32) - 1.0) / 12.0;
    let glwe_weight: u64 = client.glwe_secret_key().as_slice().iter().sum();
    let small_key = client.lwe_secret_key().as_slice();

    let (mut sum_sq, mut predicted, mut count) = (0f64, 0f64, 0f64);
    for _ in 0..bootstraps {
        let m = rng.next_u64() % params.plaintext_modulus();
        let ct = client.encrypt_small(m, &mut rng).unwrap();
        let switched =
            modulus_switch_lwe(&ct, params.polynomial_size(), params.modulus_switch()).unwrap();
        let (body, mask) = switched.split_last().unwrap();
        let dot: usize = mask
            .iter()
            .zip(small_key)
            .map(|(&a, &s)| a * s as usize)
            .sum();
        let rho = (body + 2 * n - dot % (2 * n)) % (2 * n);
        let active = mask.iter().filter(|&&a| a != 0).count() as f64;
        let active_ones = mask
            .iter()
            .zip(small_key)
            .filter(|&(&a, &s)| a != 0 && s == 1)
            .count() as f64;
        predicted += active * (k + 1) as f64 * l * n as f64 * digit_second_moment * v_bsk
            + active_ones * (1.0 + glwe_weight as f64) * v_round;

        let mut expected = vec![0u64; n];
        multiply_by_monomial(&mut expected, lut.polynomial(), 2 * n - rho).unwrap();
        let acc = exact.blind_rotate(&ct, &lut).unwrap();
        let phase = client.glwe_secret_key().phase(&acc).unwrap();
        for (&x, &y) in phase.iter().zip(&expected) {
            let e = x.wrapping_sub(y) as i64 as f64;
            sum_sq += e * e;
            count += 1.0;
        }
    }
    (sum_sq / count, predicted / bootstraps as f64)
}

fn check(name: &str, params: Parameters, seed: u8, bootstraps: usize) {
    let (measured, predicted) = measure(params, seed, bootstraps);
    let ratio = measured / predicted;
    println!(
        "{name}: measured variance 2^{:.2}, predicted 2^{:.2}, ratio {ratio:.3}",
        measured.log2(),
        predicted.log2()
    );
    assert!((2.0 / 3.0..=1.5).contains(&ratio), "{name}: ratio {ratio}");
}

fn variant(glwe_std_log2: i32, base_log: usize, levels: usize) -> Parameters {
    Parameters::new(ParameterSpec {
        glwe_noise: NoiseDistribution::Gaussian {
            std: 2f64.powi(glwe_std_log2),
        },
        pbs_decomposition: DecompositionParams::new(base_log, levels).unwrap(),
        ..*PARAM_TEST_INSECURE.spec()
    })
    .unwrap()
}

#[test]
fn output_variance_matches_theory() {
    // The test set: the decomposition's rounding term dominates (about 2^94.4 against 2^89.4
    // for the key-noise term).
    check("PARAM_TEST_INSECURE", PARAM_TEST_INSECURE, 1, 32);
    // sigma_glwe = 2^-40: the bootstrap key's noise dominates (2^109.4).
    check("test set, sigma_glwe 2^-40", variant(-40, 23, 1), 2, 8);
    // Two levels of 2^12, sigma_glwe = 2^-30: the key-noise term with l = 2 dominates.
    check(
        "test set, 2 levels of 2^12, sigma_glwe 2^-30",
        variant(-30, 12, 2),
        3,
        4,
    );
}

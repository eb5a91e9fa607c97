//! Criterion bench `tfhe_rs_cpu`: this crate's CPU KS+PBS beside tfhe-rs 1.8.2's on the same
//! machine, one ciphertext on one thread each, with the same keys (this crate's, handed to
//! tfhe-rs through their raw words): classic on `PARAM_MESSAGE_2_CARRY_2` and multi-bit on
//! `PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2`. Ids `tfhe_rs_cpu/<set>/<library>`.
//!
//! tfhe-rs is a dev-dependency only, compiled at opt-level 1 by the workspace's profiles (its
//! FFT takes over 15 minutes to compile at 3 on 2 cores), so this bench has a profile of its
//! own that compiles it at 3, and a feature that keeps it out of ordinary builds:
//!
//! ```text
//! cargo bench -p gpu-crypto-fhe-pbs --features tfhe-rs-bench --profile tfhe-rs-bench \
//!     --bench tfhe_rs_cpu
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use fhe_pbs::{
    AnyBootstrapKey, BlindRotationMode, Bootstrapper, ClientKey, Cpu, Csprng, EvaluationKeys,
    LookupTable, LweCiphertext, PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2,
    PARAM_MESSAGE_2_CARRY_2, Parameters,
};
use tfhe::core_crypto::prelude as tfhe_core;
use tfhe::core_crypto::prelude::CiphertextModulus;

/// tfhe-rs's own bootstrap with this crate's key, transformed once.
enum TheirKey {
    Classic(tfhe_core::FourierLweBootstrapKeyOwned),
    MultiBit(tfhe_core::FourierLweMultiBitBootstrapKeyOwned),
}

fn their_key(params: &Parameters, key: &AnyBootstrapKey) -> TheirKey {
    let glwe_size = tfhe_core::GlweSize(params.glwe_dimension().0 + 1);
    let poly = tfhe_core::PolynomialSize(params.polynomial_size().0);
    let d = params.pbs_decomposition();
    let (base_log, levels) = (
        tfhe_core::DecompositionBaseLog(d.base_log().0),
        tfhe_core::DecompositionLevelCount(d.level_count().0),
    );
    match key {
        AnyBootstrapKey::Classic(key) => {
            let standard = tfhe_core::LweBootstrapKey::from_container(
                key.as_slice().to_vec(),
                glwe_size,
                poly,
                base_log,
                levels,
                CiphertextModulus::new_native(),
            );
            let mut fourier = tfhe_core::FourierLweBootstrapKey::new(
                standard.input_lwe_dimension(),
                glwe_size,
                poly,
                base_log,
                levels,
            );
            tfhe_core::convert_standard_lwe_bootstrap_key_to_fourier(&standard, &mut fourier);
            TheirKey::Classic(fourier)
        }
        AnyBootstrapKey::MultiBit(key) => {
            let standard = tfhe_core::LweMultiBitBootstrapKey::from_container(
                key.as_slice().to_vec(),
                glwe_size,
                poly,
                base_log,
                levels,
                tfhe_core::LweBskGroupingFactor(key.grouping_factor().0),
                CiphertextModulus::new_native(),
            );
            let mut fourier = tfhe_core::FourierLweMultiBitBootstrapKey::new(
                standard.input_lwe_dimension(),
                glwe_size,
                poly,
                base_log,
                levels,
                standard.grouping_factor(),
            );
            tfhe_core::par_convert_standard_lwe_multi_bit_bootstrap_key_to_fourier(
                &standard,
                &mut fourier,
            );
            TheirKey::MultiBit(fourier)
        }
    }
}

fn bench_set(c: &mut Criterion, name: &str, params: Parameters) {
    let mut rng = Csprng::from_seed([0x7f; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let theirs = their_key(&params, keys.bootstrap_key());
    let ksk = tfhe_core::LweKeyswitchKey::from_container(
        keys.keyswitch_key().as_slice().to_vec(),
        tfhe_core::DecompositionBaseLog(params.ks_decomposition().base_log().0),
        tfhe_core::DecompositionLevelCount(params.ks_decomposition().level_count().0),
        tfhe_core::LweSize(params.lwe_dimension().0 + 1),
        CiphertextModulus::new_native(),
    );
    let ours = Cpu::new(keys, BlindRotationMode::Fft).unwrap();
    let lut = LookupTable::new(&params, |m| (m * m + 1) % 16).unwrap();
    let mut accumulator = tfhe_core::GlweCiphertext::new(
        0u64,
        tfhe_core::GlweSize(params.glwe_dimension().0 + 1),
        tfhe_core::PolynomialSize(params.polynomial_size().0),
        CiphertextModulus::new_native(),
    );
    accumulator
        .get_mut_body()
        .as_mut()
        .copy_from_slice(lut.polynomial());
    let input = client.encrypt(3, &mut rng).unwrap();
    let their_input = tfhe_core::LweCiphertext::from_container(
        input.as_slice().to_vec(),
        CiphertextModulus::new_native(),
    );
    let their_ks_pbs = || {
        let mut small = tfhe_core::LweCiphertext::new(
            0u64,
            tfhe_core::LweSize(params.lwe_dimension().0 + 1),
            CiphertextModulus::new_native(),
        );
        tfhe_core::keyswitch_lwe_ciphertext(&ksk, &their_input, &mut small);
        let mut out = tfhe_core::LweCiphertext::new(
            0u64,
            tfhe_core::LweSize(params.big_lwe_dimension().0 + 1),
            CiphertextModulus::new_native(),
        );
        match &theirs {
            TheirKey::Classic(key) => tfhe_core::programmable_bootstrap_lwe_ciphertext(
                &small,
                &mut out,
                &accumulator,
                key,
            ),
            TheirKey::MultiBit(key) => tfhe_core::multi_bit_programmable_bootstrap_lwe_ciphertext(
                &small,
                &mut out,
                &accumulator,
                key,
                tfhe_core::ThreadCount(1),
                true,
            ),
        }
        out
    };
    // Both decrypt to f(3) = 10 before anything is timed.
    let check = LweCiphertext::from_vec(their_ks_pbs().into_container()).unwrap();
    assert_eq!(client.decrypt(&check).unwrap(), 10, "{name}: tfhe-rs");
    let check = ours.keyswitch_bootstrap(&input, &lut).unwrap();
    assert_eq!(client.decrypt(&check).unwrap(), 10, "{name}: this crate");

    let mut group = c.benchmark_group(format!("tfhe_rs_cpu/{name}"));
    group.sample_size(10);
    // One ciphertext in FFT mode runs on one thread.
    group.bench_function("fhe-pbs", |b| {
        b.iter(|| ours.keyswitch_bootstrap(&input, &lut).unwrap())
    });
    group.bench_function("tfhe-rs", |b| b.iter(their_ks_pbs));
    group.finish();
}

fn tfhe_rs_cpu(c: &mut Criterion) {
    bench_set(c, "classic-2_2", PARAM_MESSAGE_2_CARRY_2);
    bench_set(
        c,
        "multi-bit-g4-2_2",
        PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2,
    );
}

criterion_group!(benches, tfhe_rs_cpu);
criterion_main!(benches);

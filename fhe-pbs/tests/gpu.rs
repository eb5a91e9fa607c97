//! CPU-vs-GPU tests of the CUDA backend. Every test needs a CUDA GPU and fails (never skips)
//! without one: run with `cargo test --release -p fhe-pbs --test gpu -- --include-ignored`.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;
use std::time::Instant;

mod common;

use fhe_pbs::decomposition::decompose_slice;
use fhe_pbs::glwe::sample_extract;
use fhe_pbs::keyswitch::keyswitch;
use fhe_pbs::modswitch::modulus_switch_lwe;
use fhe_pbs::{
    BlindRotationMode, Bootstrapper, ClientKey, Cpu, Csprng, Cuda, DecompositionParams, Engine,
    Error, EvaluationKeys, GlweCiphertext, GlweDimension, LookupTable, LweCiphertext, LweDimension,
    ModulusSwitchType, MultiGpu, NoiseDistribution, PARAM_MESSAGE_2_CARRY_2, PARAM_TEST_INSECURE,
    ParameterSpec, Parameters, PolynomialSize, stages,
};

struct Setup {
    name: &'static str,
    client: ClientKey,
    cpu: Cpu,
    exact: Cpu,
    gpu: Cuda,
}

fn setup(name: &'static str, params: Parameters, seed: u8) -> Setup {
    let start = Instant::now();
    let mut rng = Csprng::from_seed([seed; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let gpu = Cuda::new(&keys, Engine::Amortized)
        .unwrap_or_else(|e| panic!("{name}: the CUDA backend could not start: {e}"));
    let cpu = Cpu::new(keys, BlindRotationMode::Fft).unwrap();
    let exact = cpu.with_mode(BlindRotationMode::Exact).unwrap();
    println!(
        "{name}: keys and upload in {:.2?} on {} (cluster kernel: {})",
        start.elapsed(),
        gpu.name(),
        gpu.has_cluster_kernel()
    );
    Setup {
        name,
        client,
        cpu,
        exact,
        gpu,
    }
}

fn test_set() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| setup("PARAM_TEST_INSECURE", PARAM_TEST_INSECURE, 21))
}

fn standard_set() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| setup("PARAM_MESSAGE_2_CARRY_2", PARAM_MESSAGE_2_CARRY_2, 22))
}

fn both_sets() -> [&'static Setup; 2] {
    [test_set(), standard_set()]
}

fn random_lwe(rng: &mut Csprng, dimension: usize) -> LweCiphertext {
    let mut words = vec![0u64; dimension + 1];
    rng.fill_uniform(&mut words);
    LweCiphertext::from_vec(words).unwrap()
}

fn signed_distance(a: u64, b: u64) -> u64 {
    (a.wrapping_sub(b) as i64).unsigned_abs()
}

fn log2(x: u64) -> f64 {
    (x.max(1) as f64).log2()
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn keyswitch_is_bit_exact() {
    let mut rng = Csprng::from_seed([1; 32]);
    for s in both_sets() {
        let params = *s.gpu.parameters();
        let ksk = s.cpu.keys().keyswitch_key();
        let big = params.big_lwe_dimension().0;
        // Single ciphertexts: random words (every digit pattern) and real encryptions.
        for trial in 0..4 {
            let ct = if trial % 2 == 0 {
                random_lwe(&mut rng, big)
            } else {
                s.client.encrypt(trial as u64 % 4, &mut rng).unwrap()
            };
            let expected = keyswitch(ksk, &ct).unwrap();
            let got = s.gpu.keyswitch(&ct).unwrap();
            assert_eq!(
                got, expected,
                "{}: single key switch, trial {trial}",
                s.name
            );
        }
        // Every tile of the key switch by key columns (1, 4 and 16 ciphertexts, partly
        // filled), either side of the largest run kept in host memory (16) and of the
        // tensor-core key switch's threshold (64), with partial tiles of 128 ciphertexts.
        for size in [2usize, 3, 4, 5, 9, 16, 17, 37, 64, 130, 300] {
            let inputs: Vec<LweCiphertext> = (0..size).map(|_| random_lwe(&mut rng, big)).collect();
            let got = s.gpu.keyswitch_batch(&inputs).unwrap();
            assert_eq!(got.len(), size);
            for (i, (ct, out)) in inputs.iter().zip(&got).enumerate() {
                let expected = keyswitch(ksk, ct).unwrap();
                if let Some(w) = (0..expected.as_slice().len())
                    .find(|&w| expected.as_slice()[w] != out.as_slice()[w])
                {
                    panic!(
                        "{}: batch of {size}, ciphertext {i}, word {w}: expected {:#x}, got {:#x}",
                        s.name,
                        expected.as_slice()[w],
                        out.as_slice()[w]
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn integer_stages_are_bit_exact() {
    let s = test_set();
    let mut rng = Csprng::from_seed([2; 32]);
    let params = *s.gpu.parameters();
    // Modulus switch, including the rounding boundaries.
    let mut inputs: Vec<LweCiphertext> = (0..5)
        .map(|_| random_lwe(&mut rng, params.lwe_dimension().0))
        .collect();
    let step = 1u64 << (64 - 11); // 2^64 / 2N for N = 1024
    for (i, w) in inputs[0].as_mut_slice().iter_mut().enumerate().take(64) {
        *w = (i as u64 * step / 2).wrapping_add((i as u64 % 3).wrapping_sub(1));
    }
    inputs[1].as_mut_slice()[0] = u64::MAX;
    let got = stages::modulus_switch(&s.gpu, &inputs).unwrap();
    for (i, (ct, g)) in inputs.iter().zip(&got).enumerate() {
        let expected =
            modulus_switch_lwe(ct, params.polynomial_size(), params.modulus_switch()).unwrap();
        assert_eq!(g, &expected, "modulus switch of ciphertext {i}");
    }
    // Decomposition: random words and the tie cases of every level.
    for (b, l) in [(4, 4), (23, 1), (16, 4), (7, 3), (64, 1), (1, 64), (3, 5)] {
        let dp = DecompositionParams::new(b, l).unwrap();
        let mut words: Vec<u64> = (0..1000).map(|_| rng.next_u64()).collect();
        for level in 0..l {
            let bit = 64 - (level + 1) * b; // weight of a digit of this level
            let half = if b * (level + 1) <= 64 && b >= 1 {
                1u64.checked_shl((bit + b - 1) as u32).unwrap_or(0)
            } else {
                0
            };
            words.push(half);
            words.push(half | (1u64 << 63));
            words.push(half.wrapping_mul(3));
        }
        words.extend([0, u64::MAX, 1 << 63, (1 << 63) - 1]);
        let got = stages::decompose(&s.gpu, &words, dp).unwrap();
        let mut expected = vec![0i64; words.len() * l];
        decompose_slice(&words, dp, &mut expected).unwrap();
        if let Some(i) = (0..expected.len()).find(|&i| expected[i] != got[i]) {
            let (level, index) = (i / words.len(), i % words.len());
            panic!(
                "decomposition b = {b}, l = {l}: word {index} = {:#x}, level {level}: expected {}, \
                 got {}",
                words[index], expected[i], got[i]
            );
        }
    }
    // The PBS decomposition as the blind rotations compute it (one level of 23 bits: a path of
    // its own), on random words and around every tie of the top digit, the rounding bit set
    // and clear.
    let pbs = params.pbs_decomposition();
    let mut words: Vec<u64> = (0..4000).map(|_| rng.next_u64()).collect();
    let rounding = 1u64 << (63 - pbs.base_log().0 * pbs.level_count().0);
    for top in [1u64 << 63, 3 << 62, 1 << 62, 0, u64::MAX << 41] {
        for delta in [0, 1, rounding - 1, rounding, rounding + 1] {
            words.extend([top.wrapping_add(delta), top.wrapping_sub(delta)]);
        }
    }
    let got = stages::pbs_decompose(&s.gpu, &words).unwrap();
    let mut expected = vec![0i64; words.len() * pbs.level_count().0];
    decompose_slice(&words, pbs, &mut expected).unwrap();
    if let Some(i) = (0..expected.len()).find(|&i| expected[i] != got[i]) {
        panic!(
            "PBS decomposition of {:#x}: expected {}, got {}",
            words[i % words.len()],
            expected[i],
            got[i]
        );
    }
    // Sample extraction of random GLWE ciphertexts.
    let n = params.polynomial_size();
    let k = params.glwe_dimension();
    let glwes: Vec<GlweCiphertext> = (0..3)
        .map(|_| {
            let mut words = vec![0u64; (k.0 + 1) * n.0];
            rng.fill_uniform(&mut words);
            GlweCiphertext::from_vec(words, k, n).unwrap()
        })
        .collect();
    let got = stages::sample_extract(&s.gpu, &glwes).unwrap();
    for (i, (g, out)) in glwes.iter().zip(&got).enumerate() {
        assert_eq!(out, &sample_extract(g), "sample extraction of GLWE {i}");
    }
    // LUT: uploaded as the CPU builds it; the exact blind-rotation check below covers its use.
}

/// Every message (cycled) through `keyswitch_bootstrap_batch` with random tables, checks the
/// decrypted value, and returns the outputs.
fn check_batch(s: &Setup, gpu: &Cuda, size: usize, seed: u8) -> Vec<LweCiphertext> {
    let params = *gpu.parameters();
    let p = params.plaintext_modulus();
    let mut rng = Csprng::from_seed([seed; 32]);
    let table: Vec<u64> = (0..p).map(|_| rng.next_u64() % p).collect();
    let lut = LookupTable::from_values(&params, &table).unwrap();
    let messages: Vec<u64> = (0..size as u64).map(|i| i % p).collect();
    let inputs: Vec<LweCiphertext> = messages
        .iter()
        .map(|&m| s.client.encrypt(m, &mut rng).unwrap())
        .collect();
    let start = Instant::now();
    let outputs = gpu.keyswitch_bootstrap_batch(&inputs, &lut).unwrap();
    let elapsed = start.elapsed();
    assert_eq!(outputs.len(), size, "{}: output count", s.name);
    for (i, (out, &m)) in outputs.iter().zip(&messages).enumerate() {
        assert_eq!(out.dimension(), params.big_lwe_dimension());
        let got = s.client.decrypt(out).unwrap();
        assert_eq!(
            got,
            table[m as usize],
            "{} / {:?}: batch of {size}, ciphertext {i}: f({m}) with table {table:?}: phase \
             {:#x}",
            s.name,
            gpu.engine(),
            s.client.phase(out).unwrap()
        );
    }
    println!(
        "{} / {:?}: {size} KS+PBS in {elapsed:.2?}",
        s.name,
        gpu.engine()
    );
    outputs
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn bootstraps_decrypt_to_the_table_on_both_engines() {
    for s in both_sets() {
        for engine in [Engine::LowLatency, Engine::Amortized] {
            let gpu = s.gpu.with_engine(engine);
            let sizes: &[usize] = if s.name == "PARAM_TEST_INSECURE" || engine == Engine::Amortized
            {
                &[1, 3, 7, 16, 17, 100, 1000]
            } else {
                &[1, 3, 7, 16, 17, 100]
            };
            for (t, &size) in sizes.iter().enumerate() {
                check_batch(s, &gpu, size, 30 + t as u8);
            }
        }
    }
}

/// Blind rotations and bootstraps of `trials` fresh ciphertexts on both engines: every GLWE
/// phase coefficient and every LWE phase within (delta / 2) / 64 of the exact CPU's, and the
/// same decryptions.
fn assert_phases_close_to_exact(s: &Setup, trials: usize, rng: &mut Csprng) {
    let params = *s.gpu.parameters();
    let p = params.plaintext_modulus();
    let table: Vec<u64> = (0..p).map(|m| (5 * m + 3) % p).collect();
    let lut = LookupTable::from_values(&params, &table).unwrap();
    let inputs: Vec<LweCiphertext> = (0..trials)
        .map(|m| s.client.encrypt_small(m as u64 % p, rng).unwrap())
        .collect();
    let glwe_key = s.client.glwe_secret_key();
    // The multi-bit GPU bootstrap sums each bundle's 2^g transformed GGSWs (as tfhe-rs does),
    // while the exact CPU one sums them as integers: four bits more f64 rounding error.
    let bound = match params.pbs_kind() {
        fhe_pbs::PbsKind::Classic => (params.delta() / 2) >> 6,
        fhe_pbs::PbsKind::MultiBit(_) => (params.delta() / 2) >> 4,
    };
    for engine in [Engine::LowLatency, Engine::Amortized] {
        let gpu = s.gpu.with_engine(engine);
        let accs = gpu.blind_rotate_batch(&inputs, &lut).unwrap();
        let outs = gpu.bootstrap_batch(&inputs, &lut).unwrap();
        let mut max_lwe = 0u64;
        let mut max_glwe = 0u64;
        for (i, ct) in inputs.iter().enumerate() {
            let exact_acc = s.exact.blind_rotate(ct, &lut).unwrap();
            let exact_phase = glwe_key.phase(&exact_acc).unwrap();
            let gpu_phase = glwe_key.phase(&accs[i]).unwrap();
            for (t, (&x, &y)) in gpu_phase.iter().zip(&exact_phase).enumerate() {
                let d = signed_distance(x, y);
                assert!(
                    d < bound,
                    "{} / {engine:?}: ciphertext {i}, GLWE phase coefficient {t}: gpu {x:#x}, \
                     exact {y:#x} (distance 2^{:.1})",
                    s.name,
                    log2(d)
                );
                max_glwe = max_glwe.max(d);
            }
            let exact_out = s.exact.bootstrap(ct, &lut).unwrap();
            let d = signed_distance(
                s.client.phase(&outs[i]).unwrap(),
                s.client.phase(&exact_out).unwrap(),
            );
            max_lwe = max_lwe.max(d);
            assert_eq!(
                s.client.decrypt(&outs[i]).unwrap(),
                s.client.decrypt(&exact_out).unwrap(),
                "{} / {engine:?}: ciphertext {i} decrypts differently",
                s.name
            );
        }
        println!(
            "{} / {engine:?}: max |phase_gpu - phase_exact| = 2^{:.1} (LWE), 2^{:.1} (all GLWE \
             coefficients); delta / 2 = 2^{:.1}",
            s.name,
            log2(max_lwe),
            log2(max_glwe),
            log2(params.delta() / 2)
        );
        assert!(
            max_lwe < bound,
            "{}: LWE phase distance 2^{:.1}",
            s.name,
            log2(max_lwe)
        );
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn phases_are_close_to_the_exact_cpu_blind_rotation() {
    let mut rng = Csprng::from_seed([4; 32]);
    for s in both_sets() {
        let trials = if s.name == "PARAM_TEST_INSECURE" {
            4
        } else {
            2
        };
        assert_phases_close_to_exact(s, trials, &mut rng);
    }
}

/// An insecure caller-defined set (small `n`, tiny noise) with the given shape; `pbs` and `ks`
/// are (base log, levels), the LWE (and key-switching-key) noise has standard deviation
/// `2^-lwe_noise_log2`; the centered-mean modulus switch.
fn custom_set(
    polynomial_size: usize,
    glwe_dimension: usize,
    pbs: (usize, usize),
    ks: (usize, usize),
    lwe_dimension: usize,
    plaintext_modulus: u64,
    lwe_noise_log2: u32,
) -> Parameters {
    Parameters::new(ParameterSpec {
        lwe_dimension: LweDimension(lwe_dimension),
        glwe_dimension: GlweDimension(glwe_dimension),
        polynomial_size: PolynomialSize(polynomial_size),
        lwe_noise: NoiseDistribution::Gaussian {
            std: 1.0 / (1u64 << lwe_noise_log2) as f64,
        },
        glwe_noise: NoiseDistribution::Gaussian {
            std: 1.0 / (1u64 << 50) as f64,
        },
        pbs_decomposition: DecompositionParams::new(pbs.0, pbs.1).unwrap(),
        ks_decomposition: DecompositionParams::new(ks.0, ks.1).unwrap(),
        plaintext_modulus,
        modulus_switch: ModulusSwitchType::CenteredMeanNoiseReduction,
    })
    .unwrap()
}

/// `params` with the plain rounding modulus switch.
fn standard_switch(params: Parameters) -> Parameters {
    Parameters::new(ParameterSpec {
        modulus_switch: ModulusSwitchType::Standard,
        ..*params.spec()
    })
    .unwrap()
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn caller_defined_sets_of_every_shape_match_the_cpu() {
    // N from 512 to 8192, k from 1 to 3, one to eight PBS levels, key switches of 2 to 64
    // levels; the fourth and fifth sets' digit polynomials do not fit in shared memory (the
    // amortized kernel keeps them in device memory), the first's key-switch digits do not fit
    // the large tile.
    let sets = [
        (
            "N=512 k=2 l=3 ks=1x64",
            standard_switch(custom_set(512, 2, (7, 3), (1, 64), 64, 4, 30)),
        ),
        (
            "N=1024 k=3 l=2",
            custom_set(1024, 3, (10, 2), (4, 4), 32, 2, 30),
        ),
        (
            "N=4096 k=1 l=2",
            standard_switch(custom_set(4096, 1, (15, 2), (4, 4), 48, 8, 30)),
        ),
        (
            "N=8192 k=1 l=2",
            custom_set(8192, 1, (15, 2), (6, 3), 32, 16, 30),
        ),
        (
            "N=2048 k=1 l=8",
            standard_switch(custom_set(2048, 1, (4, 8), (4, 4), 32, 4, 30)),
        ),
        // One PBS level (the decomposition fused with the first FFT pass) at both ends of N,
        // and at N = 4096, the largest N whose cluster kernel fits in shared memory.
        (
            "N=4096 k=1 l=1",
            custom_set(4096, 1, (22, 1), (4, 4), 32, 4, 30),
        ),
        (
            "N=8192 k=1 l=1",
            standard_switch(custom_set(8192, 1, (22, 1), (4, 4), 32, 4, 30)),
        ),
        (
            "N=512 k=3 l=1",
            custom_set(512, 3, (20, 1), (3, 5), 32, 4, 30),
        ),
        // A key switch with 32-bit digits (the wide key-switch kernels); digits that large
        // need a far smaller key-switching-key noise than the other sets.
        (
            "N=1024 k=1 l=1 ks=32x2",
            standard_switch(custom_set(1024, 1, (20, 1), (32, 2), 32, 4, 60)),
        ),
    ];
    let mut rng = Csprng::from_seed([9; 32]);
    for (t, (name, params)) in sets.into_iter().enumerate() {
        let s = setup(name, params, 40 + t as u8);
        let one_level = params.pbs_decomposition().level_count().0 == 1;
        if s.gpu.gpu().info().compute_capability.major >= 9
            && one_level
            && params.polynomial_size().0 <= 4096
        {
            assert!(
                s.gpu.has_cluster_kernel(),
                "{name}: the cluster kernel should fit"
            );
        }
        for engine in [Engine::LowLatency, Engine::Amortized] {
            let gpu = s.gpu.with_engine(engine);
            for (u, size) in [1, 5, 64].into_iter().enumerate() {
                check_batch(&s, &gpu, size, 50 + u as u8);
            }
        }
        assert_phases_close_to_exact(&s, 2, &mut rng);
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn keyswitch_bootstrap_matches_the_cpu_with_chunking() {
    let mut rng = Csprng::from_seed([5; 32]);
    for s in both_sets() {
        let params = *s.gpu.parameters();
        let p = params.plaintext_modulus();
        let table: Vec<u64> = (0..p).map(|_| rng.next_u64() % p).collect();
        let lut = LookupTable::from_values(&params, &table).unwrap();
        let inputs: Vec<LweCiphertext> = (0..23)
            .map(|i| s.client.encrypt(i % p, &mut rng).unwrap())
            .collect();
        let cpu = s.cpu.keyswitch_bootstrap_batch(&inputs, &lut).unwrap();
        for engine in [Engine::LowLatency, Engine::Amortized, Engine::Auto] {
            let gpu = s.gpu.with_engine(engine).with_max_chunk(5);
            let out = gpu.keyswitch_bootstrap_batch(&inputs, &lut).unwrap();
            let single = gpu.keyswitch_bootstrap(&inputs[7], &lut).unwrap();
            assert_eq!(out.len(), inputs.len());
            for (i, (g, c)) in out.iter().zip(&cpu).enumerate() {
                assert_eq!(
                    s.client.decrypt(g).unwrap(),
                    s.client.decrypt(c).unwrap(),
                    "{} / {engine:?} (chunks of 5): ciphertext {i}",
                    s.name
                );
            }
            assert_eq!(
                s.client.decrypt(&single).unwrap(),
                s.client.decrypt(&cpu[7]).unwrap()
            );
            // The chunked key switch is bit-exact too.
            let small = gpu.keyswitch_batch(&inputs).unwrap();
            let expected = s.cpu.keyswitch_batch(&inputs).unwrap();
            assert_eq!(small, expected, "{}: chunked key switch", s.name);
        }
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn error_paths() {
    let s = test_set();
    let params = PARAM_TEST_INSECURE;
    let mut rng = Csprng::from_seed([6; 32]);
    let big = s.client.encrypt(1, &mut rng).unwrap();
    let small = s.client.encrypt_small(1, &mut rng).unwrap();
    let lut = LookupTable::new(&params, |m| m).unwrap();
    let other_lut = LookupTable::new(&PARAM_MESSAGE_2_CARRY_2, |m| m).unwrap();
    let gpu = &s.gpu;
    assert!(matches!(
        gpu.bootstrap(&big, &lut),
        Err(Error::DimensionMismatch {
            expected: 256,
            got: 1024,
            ..
        })
    ));
    assert!(matches!(
        gpu.keyswitch(&small),
        Err(Error::DimensionMismatch {
            expected: 1024,
            got: 256,
            ..
        })
    ));
    assert!(matches!(
        gpu.bootstrap(&small, &other_lut),
        Err(Error::DimensionMismatch {
            expected: 1024,
            got: 2048,
            ..
        })
    ));
    assert!(matches!(
        gpu.keyswitch_bootstrap_batch(&[big.clone(), small.clone()], &lut),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        gpu.bootstrap_batch(&[small.clone(), big.clone()], &lut),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(gpu.bootstrap_batch(&[], &lut).unwrap().is_empty());
    let glwe = GlweCiphertext::from_vec(
        vec![0; 3 * 512],
        params.glwe_dimension(),
        fhe_pbs::PolynomialSize(768),
    )
    .unwrap();
    assert!(matches!(
        stages::sample_extract(gpu, &[glwe]),
        Err(Error::DimensionMismatch { .. })
    ));
}

/// Keys and ciphertexts made by tfhe-rs, key-switched and bootstrapped by both CUDA engines,
/// decrypted by tfhe-rs: the integer stages (key switch, modulus switch, decomposition) equal
/// the CPU's exact ones bit for bit, and the messages are tfhe-rs's.
#[test]
#[ignore = "requires a CUDA GPU"]
fn tfhe_rs_keys_and_ciphertexts_bootstrap_on_the_gpu() {
    use tfhe::core_crypto::prelude as tfhe_core;
    let params = PARAM_TEST_INSECURE;
    let p = params.plaintext_modulus();
    let mut keys = common::tfhe_keys(&params);
    let (_, evaluation) = common::our_keys(params, &keys);
    let low = Cuda::new(&evaluation, Engine::LowLatency).unwrap();
    let amortized = low.with_engine(Engine::Amortized);
    let lut = LookupTable::new(&params, |m| (5 * m + 2) % p).unwrap();
    let big_key = keys.glwe.as_lwe_secret_key();
    let native = tfhe_core::CiphertextModulus::new_native();
    let inputs: Vec<LweCiphertext> = (0..p)
        .map(|m| {
            let mut ct = tfhe_core::LweCiphertext::new(
                0u64,
                tfhe_core::LweSize(params.big_lwe_dimension().0 + 1),
                native,
            );
            tfhe_core::encrypt_lwe_ciphertext(
                &big_key,
                &mut ct,
                tfhe_core::Plaintext(m * params.delta()),
                tfhe_core::Gaussian::from_dispersion_parameter(
                    tfhe_core::StandardDev(2f64.powi(-50)),
                    0.0,
                ),
                &mut keys.encryption,
            );
            LweCiphertext::from_vec(ct.as_ref().to_vec()).unwrap()
        })
        .collect();
    for engine in [&low, &amortized] {
        let switched = engine.keyswitch_batch(&inputs).unwrap();
        for (ct, got) in inputs.iter().zip(&switched) {
            assert_eq!(got, &keyswitch(evaluation.keyswitch_key(), ct).unwrap());
        }
        let outputs = engine.keyswitch_bootstrap_batch(&inputs, &lut).unwrap();
        for (m, out) in outputs.into_iter().enumerate() {
            let out = tfhe_core::LweCiphertext::from_container(out.into_vec(), native);
            let phase = tfhe_core::decrypt_lwe_ciphertext(&big_key, &out).0;
            assert_eq!(
                fhe_pbs::lwe::decode(phase, p).unwrap(),
                (5 * m as u64 + 2) % p,
                "{}: m = {m}",
                engine.name()
            );
        }
    }
}

/// The insecure test shape with `n = 252`, the standard switch, multi-bit with `g`.
fn multi_bit_test_set(g: usize) -> Parameters {
    let spec = ParameterSpec {
        lwe_dimension: LweDimension(252),
        modulus_switch: ModulusSwitchType::Standard,
        ..*PARAM_TEST_INSECURE.spec()
    };
    Parameters::new_multi_bit(spec, fhe_pbs::GroupingFactor(g)).unwrap()
}

/// The multi-bit bootstrap on the GPU (key bundles, then the cluster kernel) against the exact
/// CPU blind rotation, coefficient by coefficient, for g = 2, 3 on the test shape and
/// tfhe-rs's g = 4 set; batches of awkward sizes (one chunk and several) decrypt to the table.
#[test]
#[ignore = "requires a CUDA GPU"]
fn multi_bit_bootstraps_match_the_exact_cpu() {
    let mut rng = Csprng::from_seed([44; 32]);
    for (name, params, seed) in [
        ("multi-bit g = 2 (test shape)", multi_bit_test_set(2), 61),
        ("multi-bit g = 3 (test shape)", multi_bit_test_set(3), 62),
        (
            "PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2",
            fhe_pbs::PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2,
            63,
        ),
    ] {
        let s = setup(name, params, seed);
        assert_phases_close_to_exact(&s, 10, &mut rng);
        for size in [1, 7, 33] {
            check_batch(&s, &s.gpu, size, seed);
        }
        check_batch(&s, &s.gpu.with_max_chunk(5), 17, seed);
        if params == fhe_pbs::PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2 {
            multi_bit_output_noise_meets_tfhe_rs_formula(&s);
        }
        // One ciphertext, timed (after the warm-up above).
        let lut = LookupTable::new(&params, |m| m).unwrap();
        let ct = s.client.encrypt(3, &mut rng).unwrap();
        let gpu = s.gpu.with_engine(Engine::LowLatency);
        let start = Instant::now();
        let out = gpu.keyswitch_bootstrap(&ct, &lut).unwrap();
        println!("{name}: one KS+PBS in {:.2?}", start.elapsed());
        assert_eq!(s.client.decrypt(&out).unwrap(), 3);
    }
}

/// The output error's variance of 256 multi-bit bootstraps on the GPU (g = 4 set, identity
/// table) against tfhe-rs's formula for its own multi-bit PBS, which sums transformed GGSWs
/// as the GPU does: within the estimate's error of it, or below.
fn multi_bit_output_noise_meets_tfhe_rs_formula(s: &Setup) {
    use tfhe::core_crypto::commons::noise_formulas::lwe_multi_bit_programmable_bootstrap::multi_bit_pbs_variance_132_bits_security_tuniform_gf_4_fft_mul;
    use tfhe::core_crypto::prelude as tfhe_core;
    let params = *s.gpu.parameters();
    let decomposition = params.pbs_decomposition();
    let expected = multi_bit_pbs_variance_132_bits_security_tuniform_gf_4_fft_mul(
        tfhe_core::LweDimension(params.lwe_dimension().0),
        tfhe_core::GlweDimension(params.glwe_dimension().0),
        tfhe_core::PolynomialSize(params.polynomial_size().0),
        tfhe_core::DecompositionBaseLog(decomposition.base_log().0),
        tfhe_core::DecompositionLevelCount(decomposition.level_count().0),
        53.0,
        2f64.powi(64),
    )
    .0;
    let mut rng = Csprng::from_seed([45; 32]);
    let p = params.plaintext_modulus();
    let identity = LookupTable::new(&params, |m| m).unwrap();
    let messages: Vec<u64> = (0..256).map(|i| i % p).collect();
    let inputs: Vec<LweCiphertext> = messages
        .iter()
        .map(|&m| s.client.encrypt_small(m, &mut rng).unwrap())
        .collect();
    let outputs = s.gpu.bootstrap_batch(&inputs, &identity).unwrap();
    let errors: Vec<f64> = outputs
        .iter()
        .zip(&messages)
        .map(|(out, &m)| {
            let error = s
                .client
                .phase(out)
                .unwrap()
                .wrapping_sub(m * params.delta());
            error as i64 as f64 / 2f64.powi(64)
        })
        .collect();
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    let variance =
        errors.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (errors.len() - 1) as f64;
    let ratio = variance / expected;
    println!(
        "{}: GPU output error variance / tfhe-rs's multi-bit formula (2^{:.2}) = {ratio:.3} \
         over 256 bootstraps",
        s.name,
        expected.log2()
    );
    assert!(ratio < 1.35, "ratio {ratio}");
}

/// The device-resident stages give, word for word, what the host-to-host batches give (the
/// same kernels on the same chunks), in one chunk and in several, for the classic sets and a
/// multi-bit one; stages chained on the device equal the fused KS+PBS; bad inputs are errors.
#[test]
#[ignore = "requires a CUDA GPU"]
fn device_resident_batches_equal_the_host_batches() {
    let mut rng = Csprng::from_seed([46; 32]);
    let multi_bit = setup("multi-bit g = 3 (test shape)", multi_bit_test_set(3), 64);
    for s in [test_set(), standard_set(), &multi_bit] {
        let params = *s.gpu.parameters();
        let p = params.plaintext_modulus();
        let table: Vec<u64> = (0..p).map(|_| rng.next_u64() % p).collect();
        let lut = LookupTable::from_values(&params, &table).unwrap();
        let inputs: Vec<LweCiphertext> = (0..37)
            .map(|i| s.client.encrypt(i % p, &mut rng).unwrap())
            .collect();
        for gpu in [
            s.gpu.with_engine(Engine::Auto),
            s.gpu.with_engine(Engine::Amortized).with_max_chunk(8),
        ] {
            let what = format!("{} / {:?}", s.name, gpu.engine());
            let host = gpu.keyswitch_bootstrap_batch(&inputs, &lut).unwrap();
            let on_device = gpu.upload(&inputs).unwrap();
            assert_eq!(on_device.len(), inputs.len());
            assert_eq!(on_device.dimension(), params.big_lwe_dimension());
            assert_eq!(on_device.to_host().unwrap(), inputs, "{what}: round trip");
            let fused = gpu.keyswitch_bootstrap_on_device(&on_device, &lut).unwrap();
            assert_eq!(fused.to_host().unwrap(), host, "{what}: KS+PBS");
            for (i, ct) in host.iter().enumerate() {
                let m = i as u64 % p;
                assert_eq!(
                    s.client.decrypt(ct).unwrap(),
                    table[m as usize],
                    "{what}: {i}"
                );
            }
            let small = gpu.keyswitch_on_device(&on_device).unwrap();
            assert_eq!(small.dimension(), params.lwe_dimension());
            assert_eq!(
                small.to_host().unwrap(),
                gpu.keyswitch_batch(&inputs).unwrap(),
                "{what}: KS"
            );
            let chained = gpu.bootstrap_on_device(&small, &lut).unwrap();
            assert_eq!(chained.to_host().unwrap(), host, "{what}: KS, then PBS");

            // Bad inputs: a stage given the other dimension, a table of another size, a
            // mixed upload; an empty batch gives an empty one.
            assert!(matches!(
                gpu.bootstrap_on_device(&on_device, &lut),
                Err(Error::DimensionMismatch { .. })
            ));
            assert!(matches!(
                gpu.keyswitch_on_device(&small),
                Err(Error::DimensionMismatch { .. })
            ));
            let other = if params.polynomial_size().0 == 2048 {
                1024
            } else {
                2048
            };
            let spec = ParameterSpec {
                polynomial_size: PolynomialSize(other),
                ..*PARAM_TEST_INSECURE.spec()
            };
            let wrong_lut = LookupTable::new(&Parameters::new(spec).unwrap(), |m| m).unwrap();
            assert!(matches!(
                gpu.keyswitch_bootstrap_on_device(&on_device, &wrong_lut),
                Err(Error::DimensionMismatch { .. })
            ));
            let mixed = [inputs[0].clone(), small.to_host().unwrap()[0].clone()];
            assert!(matches!(
                gpu.upload(&mixed),
                Err(Error::DimensionMismatch { .. })
            ));
            let empty = gpu.upload(&[]).unwrap();
            assert!(empty.is_empty());
            let out = gpu.keyswitch_bootstrap_on_device(&empty, &lut).unwrap();
            assert!(out.is_empty() && out.to_host().unwrap().is_empty());
        }
    }
}

/// A multi-GPU backend gives, word for word, what one GPU gives, for every batch operation and
/// awkward batch sizes (fewer ciphertexts than GPUs, uneven parts, several chunks), on every
/// GPU of the host and on one GPU given three times (so a single-GPU machine runs the split
/// too); single ciphertexts go round robin; a bad part is the batch's error.
#[test]
#[ignore = "requires a CUDA GPU"]
fn multi_gpu_batches_equal_one_gpu_word_for_word() {
    let mut rng = Csprng::from_seed([47; 32]);
    let multi_bit = setup("multi-bit g = 3 (test shape)", multi_bit_test_set(3), 65);
    let gpu = std::sync::Arc::clone(test_set().gpu.gpu());
    for s in [test_set(), standard_set(), &multi_bit] {
        let keys = s.cpu.keys();
        let params = *keys.parameters();
        let p = params.plaintext_modulus();
        let table: Vec<u64> = (0..p).map(|_| rng.next_u64() % p).collect();
        let lut = LookupTable::from_values(&params, &table).unwrap();
        let inputs: Vec<LweCiphertext> = (0..133)
            .map(|i| s.client.encrypt(i % p, &mut rng).unwrap())
            .collect();
        let one = s.gpu.with_engine(Engine::Auto);
        let all = MultiGpu::new(keys, Engine::Auto).unwrap();
        let thrice =
            MultiGpu::on(&[gpu.clone(), gpu.clone(), gpu.clone()], keys, Engine::Auto).unwrap();
        assert_eq!(thrice.backends().len(), 3);
        println!("{}: {} and {}", s.name, all.name(), thrice.name());
        let small_inputs = one.keyswitch_batch(&inputs).unwrap();
        for multi in [&all, &thrice] {
            for size in [0, 1, 2, 3, 5, 64, 133] {
                let what = format!("{} on {} GPUs, {size}", s.name, multi.backends().len());
                let batch = &inputs[..size];
                let expected = one.keyswitch_bootstrap_batch(batch, &lut).unwrap();
                let got = multi.keyswitch_bootstrap_batch(batch, &lut).unwrap();
                assert_eq!(got, expected, "{what}: KS+PBS");
                for (i, ct) in got.iter().enumerate() {
                    let m = i as u64 % p;
                    assert_eq!(
                        s.client.decrypt(ct).unwrap(),
                        table[m as usize],
                        "{what}: {i}"
                    );
                }
                assert_eq!(
                    multi.keyswitch_batch(batch).unwrap(),
                    small_inputs[..size],
                    "{what}: KS"
                );
                assert_eq!(
                    multi.bootstrap_batch(&small_inputs[..size], &lut).unwrap(),
                    one.bootstrap_batch(&small_inputs[..size], &lut).unwrap(),
                    "{what}: PBS"
                );
            }
            // Single ciphertexts, round robin: the same words whichever GPU takes them.
            for (i, ct) in inputs.iter().take(4).enumerate() {
                let expected = one.keyswitch_bootstrap(ct, &lut).unwrap();
                assert_eq!(
                    multi.keyswitch_bootstrap(ct, &lut).unwrap(),
                    expected,
                    "{i}"
                );
                assert_eq!(multi.keyswitch(ct).unwrap(), small_inputs[i], "{i}");
                assert_eq!(
                    multi.bootstrap(&small_inputs[i], &lut).unwrap(),
                    one.bootstrap(&small_inputs[i], &lut).unwrap(),
                    "{i}"
                );
            }
            // A ciphertext of the wrong dimension in the last part fails the batch.
            let mut bad = inputs[..7].to_vec();
            bad[6] = small_inputs[6].clone();
            assert!(matches!(
                multi.keyswitch_bootstrap_batch(&bad, &lut),
                Err(Error::DimensionMismatch { .. })
            ));
        }
    }
    assert!(matches!(
        MultiGpu::on(&[], test_set().cpu.keys(), Engine::Auto),
        Err(Error::InvalidParameter { name: "gpus", .. })
    ));
}

//! The integer-exact stages against hand-computed and independently written expectations:
//! modulus switch, decomposition, encryption with given randomness, sample extraction, key
//! switch, lookup tables, polynomial products, the RNG and the noise samplers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fhe_pbs::decomposition::{
    closest_representable, decompose, decompose_into, decompose_slice, recompose,
};
use fhe_pbs::glwe::{encrypt_glwe_with_randomness, glwe_phase, sample_extract};
use fhe_pbs::keyswitch::keyswitch;
use fhe_pbs::lut::lut_polynomial;
use fhe_pbs::lwe::{decode, encode, encrypt_lwe_with_randomness, lwe_phase};
use fhe_pbs::modswitch::{modulus_switch, modulus_switch_lwe};
use fhe_pbs::polynomial::{multiply_by_monomial, negacyclic_mul, negacyclic_mul_schoolbook};
use fhe_pbs::{
    Csprng, DecompositionParams, Error, GlweCiphertext, GlweDimension, GlweSecretKey, KeyswitchKey,
    LweCiphertext, LweDimension, LweSecretKey, ModulusSwitchType, NoiseDistribution,
    PolynomialSize, fft::NegacyclicFft,
};
use proptest::prelude::*;

fn decomp(b: usize, l: usize) -> DecompositionParams {
    DecompositionParams::new(b, l).unwrap()
}

// ---------------------------------------------------------------- modulus switch

/// Independent reference: `floor((x * 2N + 2^63) / 2^64) mod 2N` in u128.
fn modswitch_reference(x: u64, n: usize) -> usize {
    let two_n = 2 * n as u128;
    (((x as u128 * two_n + (1u128 << 63)) >> 64) % two_n) as usize
}

#[test]
fn modulus_switch_edge_values() {
    let n = PolynomialSize(1024);
    let step = 1u64 << (64 - 11); // 2^64 / 2N
    let cases: [(u64, usize); 9] = [
        (0, 0),
        (step / 2 - 1, 0), // just below half a step
        (step / 2, 1),     // tie rounds up
        (step, 1),
        (step + step / 2 - 1, 1),
        (step + step / 2, 2),
        (u64::MAX, 0),                // within half a step of 2^64: wraps to 0
        (u64::MAX - step / 2 + 1, 0), // exactly half a step below 2^64: tie up, wraps
        (1u64 << 63, 1024),           // one half of the torus is N
    ];
    for (x, expected) in cases {
        assert_eq!(modulus_switch(x, n).unwrap(), expected, "x = {x:#x}");
        assert_eq!(
            modswitch_reference(x, 1024),
            expected,
            "reference, x = {x:#x}"
        );
    }
    assert_eq!(
        modulus_switch(u64::MAX - step / 2, n).unwrap(),
        2047,
        "just below the last tie"
    );
}

#[test]
fn modulus_switch_rejects_bad_sizes() {
    assert!(matches!(
        modulus_switch(5, PolynomialSize(1000)),
        Err(Error::InvalidParameter { .. })
    ));
    let ct = LweCiphertext::trivial(1, LweDimension(3)).unwrap();
    assert!(modulus_switch_lwe(&ct, PolynomialSize(0), ModulusSwitchType::Standard).is_err());
}

proptest! {
    #[test]
    fn modulus_switch_matches_reference(x in any::<u64>(), log_n in 0u32..14) {
        let n = 1usize << log_n;
        prop_assert_eq!(modulus_switch(x, PolynomialSize(n)).unwrap(), modswitch_reference(x, n));
    }
}

// ---------------------------------------------------------------- decomposition

/// Independent reference in i128: the rounded value V in `[0, B^l)` made signed (minus `B^l`
/// above `B^l / 2`, and at `B^l / 2` when rounding carried it there), then balanced digits
/// from the least significant level, a digit equal to B/2 turning into -B/2 when bit b - 1 of
/// the rest (two's complement, so set for a negative rest) is set.
fn decompose_reference(x: u64, b: usize, l: usize) -> Vec<i64> {
    let bits = b * l;
    let mut rem: i128 = if bits == 64 {
        x as i64 as i128
    } else {
        let unit = 1u128 << (64 - bits);
        let rounding_bit = (x as u128 / (unit / 2)) % 2 == 1;
        let rounded = ((x as u128 + unit / 2) / unit * unit) % (1u128 << 64);
        let value = (rounded >> (64 - bits)) as i128;
        let half = 1i128 << (bits - 1);
        if value > half || (value == half && rounding_bit) {
            value - 2 * half
        } else {
            value
        }
    };
    let base = 1i128 << b;
    let mut digits = vec![0i64; l];
    for j in (0..l).rev() {
        let r = rem.rem_euclid(base);
        let rest = rem.div_euclid(base);
        let d = if r > base / 2 || (r == base / 2 && (rest >> (b - 1)) & 1 == 1) {
            r - base
        } else {
            r
        };
        digits[j] = d as i64;
        rem = (rem - d) / base;
    }
    digits
}

#[test]
fn decomposition_known_answers() {
    // tfhe-rs's documented example (u32, B = 2^4, 3 levels), moved to the top of a u64.
    let x = 1_340_987_234u64 << 32;
    let params = decomp(4, 3);
    assert_eq!(closest_representable(x, params), 1_341_128_704u64 << 32);
    // 1_341_128_704 = 0x4FF * 2^20: digits from the bottom 0xF -> -1 (carry), 0x0 + 1 -> ... by
    // hand: 0x4FF = 5 * 256 + 0 * 16 - 1 with the carry.
    assert_eq!(decompose(x, params), vec![5, 0, -1]);

    // Ties, B = 16, 2 levels (value V in units of 2^56).
    let params = decomp(4, 2);
    // V = 0x88: low digit 8 is a tie; the next raw digit is 8 >= 8, so -8 and a carry; then
    // 9 -> -7 (carry out of the top, lost mod 2^64): -7 * 16 - 8 = -120 = 0x88 mod 256.
    assert_eq!(decompose(0x88u64 << 56, params), vec![-7, -8]);
    // V = 0x38: the next raw digit is 3 < 8, so the tie stays +8.
    assert_eq!(decompose(0x38u64 << 56, params), vec![3, 8]);
    // V = 0x78: the next raw digit is 7 < 8: +8, then 7 stays 7.
    assert_eq!(decompose(0x78u64 << 56, params), vec![7, 8]);
    // V = 0x08 with the top digit 0: +8.
    assert_eq!(decompose(0x08u64 << 56, params), vec![0, 8]);
    // V = 0x80: top digit tie with nothing above: +8.
    assert_eq!(decompose(0x80u64 << 56, params), vec![8, 0]);

    // Rounding: half a unit rounds up, just below rounds down, the top wraps to 0.
    let unit = 1u64 << 56;
    assert_eq!(closest_representable(unit / 2, params), unit);
    assert_eq!(closest_representable(unit / 2 - 1, params), 0);
    assert_eq!(closest_representable(u64::MAX, params), 0);
    assert_eq!(decompose(u64::MAX, params), vec![0, 0]);

    // V = 0x80 reached by rounding up (0x7f8 in units of 2^52: the rounding bit set): the
    // whole value is balanced first, so the top tie is -8 (tfhe-rs since it balances).
    assert_eq!(decompose((0x7f8u64 << 52) | 1, params), vec![-8, 0]);
    assert_eq!(decompose(0x7f8u64 << 52, params), vec![-8, 0]);

    // PBS parameters of both sets: B = 2^23, one level.
    let params = decomp(23, 1);
    assert_eq!(decompose(1u64 << 63, params), vec![1 << 22]); // an exact top tie stays +B/2
    assert_eq!(decompose((1u64 << 63) - 1, params), vec![-(1 << 22)]); // rounded up to it: -B/2
    assert_eq!(decompose(3u64 << 62, params), vec![-(1 << 21)]);

    // All 64 bits: no rounding.
    let params = decomp(16, 4);
    assert_eq!(
        closest_representable(0x1234_5678_9abc_def1, params),
        0x1234_5678_9abc_def1
    );
    // Ties at levels 4 and 2 whose next digits (0x7fff, 0x0001) have a clear top bit: +2^15.
    assert_eq!(
        decompose(0x0001_8000_7fff_8000, params),
        vec![1, 32768, 32767, 32768]
    );
    // A carry running all the way up and out.
    assert_eq!(decompose(u64::MAX, params), vec![0, 0, 0, -1]);
}

#[test]
fn decomposition_length_errors() {
    let params = decomp(4, 3);
    let mut digits = [0i64; 2];
    assert!(matches!(
        decompose_into(5, params, &mut digits),
        Err(Error::DimensionMismatch {
            expected: 3,
            got: 2,
            ..
        })
    ));
    assert!(recompose(&[1, 2], params).is_err());
    let mut out = [0i64; 5];
    assert!(decompose_slice(&[1, 2], params, &mut out).is_err());
    assert!(DecompositionParams::new(0, 3).is_err());
    assert!(DecompositionParams::new(5, 0).is_err());
    assert!(DecompositionParams::new(13, 5).is_err());
    assert!(DecompositionParams::new(64, 1).is_ok());
}

#[test]
fn decomposition_digits_have_the_balanced_variance() {
    // Over all 4096 representable values (B = 16, 3 levels), every level has E[d^2] within 2%
    // of (B^2 + 2) / 12 (uniform on [-B/2, B/2] with half weight at both ends). Below the top
    // level ties go either way: mean exactly 0, as many +B/2 as -B/2. At the top level a tie
    // is -B/2 when the whole value was balanced (above B^l / 2), so ties go both ways there
    // too, but for V = B^l / 2 itself: these values are exact (no rounding bit), so it stays
    // +B/2, and the top level's sum is 8.
    let params = decomp(4, 3);
    let mut sum = [0i64; 3];
    let mut sum_sq = [0i64; 3];
    let mut plus = [0u32; 3];
    let mut minus = [0u32; 3];
    for v in 0..4096u64 {
        let digits = decompose(v << 52, params);
        assert_eq!(recompose(&digits, params).unwrap(), v << 52);
        for (j, d) in digits.into_iter().enumerate() {
            sum[j] += d;
            sum_sq[j] += d * d;
            plus[j] += u32::from(d == 8);
            minus[j] += u32::from(d == -8);
        }
    }
    for (j, &sq) in sum_sq.iter().enumerate() {
        let second_moment = sq as f64 / 4096.0;
        assert!(
            (second_moment / ((256.0 + 2.0) / 12.0) - 1.0).abs() < 0.02,
            "level {}: E[d^2] = {second_moment}",
            j + 1
        );
    }
    for j in 1..3 {
        assert_eq!(sum[j], 0, "level {}", j + 1);
        assert_eq!(plus[j], minus[j], "level {}", j + 1);
    }
    assert_eq!(sum[0], 8);
    assert_eq!(
        (plus[0], minus[0]),
        (121, 120),
        "an exact top-level tie is +B/2"
    );
}

proptest! {
    #[test]
    fn decomposition_recomposes_and_matches_reference(
        x in any::<u64>(),
        (b, l) in (1usize..=64).prop_flat_map(|b| (Just(b), 1..=64 / b)),
    ) {
        let params = decomp(b, l);
        let digits = decompose(x, params);
        prop_assert_eq!(&digits, &decompose_reference(x, b, l));
        prop_assert_eq!(recompose(&digits, params).unwrap(), closest_representable(x, params));
        if b < 64 {
            let half = 1i64 << (b - 1);
            prop_assert!(digits.iter().all(|&d| (-half..=half).contains(&d)), "{:?}", digits);
        }
        // The slice form agrees, level-major.
        let input = [x, x.wrapping_mul(3)];
        let mut out = vec![0i64; 2 * l];
        decompose_slice(&input, params, &mut out).unwrap();
        for j in 0..l {
            prop_assert_eq!(out[j * 2], digits[j]);
            prop_assert_eq!(out[j * 2 + 1], decompose(input[1], params)[j]);
        }
    }

    #[test]
    fn ties_follow_the_next_digit(v in any::<u64>(), b in 2usize..=16, l in 2usize..=3) {
        // Force a tie at the lowest level and check the sign against bit b-1 of the rest.
        let bits = b * l;
        let value = (v & ((1u64 << bits) - 1)) & !((1u64 << b) - 1) | (1u64 << (b - 1));
        let x = value << (64 - bits);
        let digits = decompose(x, decomp(b, l));
        let next_top_bit = (value >> (2 * b - 1)) & 1;
        let expected = if next_top_bit == 1 { -(1i64 << (b - 1)) } else { 1i64 << (b - 1) };
        prop_assert_eq!(digits[l - 1], expected);
    }
}

// ---------------------------------------------------------------- encryption

#[test]
fn lwe_encryption_with_given_randomness() {
    let key = [1, 0, 1, 1];
    let mask = [10, 20, u64::MAX, 1 << 63];
    let plaintext = encode(5, 16).unwrap();
    assert_eq!(plaintext, 5 << 59);
    let noise = (-3i64) as u64;
    let ct = encrypt_lwe_with_randomness(&key, plaintext, &mask, noise).unwrap();
    // 10 + MAX + 2^63 + 5 * 2^59 - 3 = 10 - 1 + 2^63 + 5 * 2^59 - 3 (mod 2^64)
    let body = 6u64 + (1 << 63) + (5 << 59);
    assert_eq!(ct.as_slice(), &[10, 20, u64::MAX, 1 << 63, body]);
    assert_eq!(lwe_phase(&key, &ct).unwrap(), plaintext.wrapping_sub(3));
    assert_eq!(decode(lwe_phase(&key, &ct).unwrap(), 16).unwrap(), 5);
    assert!(matches!(
        encrypt_lwe_with_randomness(&key, 0, &mask[..3], 0),
        Err(Error::DimensionMismatch { .. })
    ));
}

#[test]
fn encoding_errors_and_rounding() {
    assert_eq!(
        encode(16, 16),
        Err(Error::MessageOutOfRange {
            message: 16,
            modulus: 16
        })
    );
    assert!(encode(1, 12).is_err());
    let delta = 1u64 << 59;
    assert_eq!(decode(3 * delta + delta / 2 - 1, 16).unwrap(), 3);
    assert_eq!(decode(3 * delta + delta / 2, 16).unwrap(), 4);
    assert_eq!(decode(0u64.wrapping_sub(delta / 2 - 1), 16).unwrap(), 0);
    assert_eq!(
        decode(17 * delta, 16).unwrap(),
        1,
        "padding bit set: reduced mod p"
    );
}

#[test]
fn glwe_encryption_with_given_randomness() {
    // k = 1, N = 4: body = A * S + plaintext + noise with the negacyclic product by hand.
    let key = [1, 0, 1, 0]; // S = 1 + X^2
    let mask = [1, 2, 3, 4]; // A = 1 + 2X + 3X^2 + 4X^3
    // A * S = A + X^2 A = (1 + 2X + 3X^2 + 4X^3) + (X^2 + 2X^3 - 3 - 4X) = -2 - 2X + 4X^2 + 6X^3
    let plaintext = [100, 0, 0, 0];
    let noise = [1, u64::MAX, 0, 0];
    let ct = encrypt_glwe_with_randomness(&key, &plaintext, &mask, &noise).unwrap();
    let minus = |v: u64| v.wrapping_neg();
    assert_eq!(ct.as_slice(), &[1, 2, 3, 4, 99, minus(3), 4, 6]);
    assert_eq!(
        glwe_phase(&key, &ct).unwrap(),
        vec![101, u64::MAX, 0, 0],
        "phase = plaintext + noise"
    );
    assert!(encrypt_glwe_with_randomness(&key, &plaintext, &mask[..3], &noise).is_err());
    assert!(encrypt_glwe_with_randomness(&key[..3], &plaintext, &mask[..3], &noise).is_err());
}

#[test]
fn seeded_rng_and_encryption_known_answers() {
    // ChaCha20 with an all-zero key and nonce: keystream 76 b8 e0 ad a0 f1 3d 90 ... (the
    // well-known first block), read little-endian.
    let mut rng = Csprng::from_seed([0; 32]);
    assert_eq!(rng.next_u64(), 0x903d_f1a0_ade0_b876);
    assert_eq!(rng.next_u64(), 0x28bd_8653_e56a_5d40);

    // A fixed seed gives fixed keys and ciphertexts (t-uniform noise: integer-only, portable).
    let mut rng = Csprng::from_seed([1; 32]);
    let key = LweSecretKey::generate(LweDimension(4), &mut rng).unwrap();
    let ct = key
        .encrypt(
            3 << 60,
            NoiseDistribution::TUniform { bound_log2: 10 },
            &mut rng,
        )
        .unwrap();
    assert_eq!(key.as_slice(), KAT_KEY);
    assert_eq!(ct.as_slice(), KAT_CIPHERTEXT);
    // And the words follow the documented order: mask words, then the noise word.
    let mut replay = Csprng::from_seed([1; 32]);
    for _ in 0..4 {
        replay.next_u64();
    }
    let mask: Vec<u64> = (0..4).map(|_| replay.next_u64()).collect();
    let r = replay.next_u64() >> (62 - 10);
    let noise = ((r >> 1) + (r & 1)).wrapping_sub(1 << 10);
    let again = encrypt_lwe_with_randomness(key.as_slice(), 3 << 60, &mask, noise).unwrap();
    assert_eq!(again, ct);
}

const KAT_KEY: &[u64] = &[0, 1, 1, 1];
const KAT_CIPHERTEXT: &[u64] = &[
    13322508299790634014,
    13895135496024976459,
    11360277989530836334,
    937678706394471283,
    11205112632061273917,
];

#[test]
fn noise_samplers_stay_in_range() {
    let mut rng = Csprng::from_seed([9; 32]);
    let b = 3;
    let mut counts = [0u32; 17];
    for _ in 0..170_000 {
        let e = rng
            .next_noise(NoiseDistribution::TUniform { bound_log2: b })
            .unwrap() as i64;
        assert!((-8..=8).contains(&e), "{e}");
        counts[(e + 8) as usize] += 1;
    }
    // Interior values 1/16 each, end points 1/32.
    let expected = 170_000.0 / 16.0;
    for (i, &c) in counts.iter().enumerate() {
        let e = if i == 0 || i == 16 {
            expected / 2.0
        } else {
            expected
        };
        assert!(
            (f64::from(c) / e - 1.0).abs() < 0.08,
            "value {}: {c}",
            i as i64 - 8
        );
    }
    let sigma = 2f64.powi(-40);
    let (mut sum_sq, count) = (0f64, 50_000);
    for _ in 0..count {
        let e = rng
            .next_noise(NoiseDistribution::Gaussian { std: sigma })
            .unwrap() as i64 as f64;
        sum_sq += e * e;
    }
    let measured = (sum_sq / f64::from(count)).sqrt() / 2f64.powi(24);
    assert!((measured - 1.0).abs() < 0.02, "std {measured} * 2^24");
    assert_eq!(
        rng.next_noise(NoiseDistribution::Gaussian { std: 0.0 }),
        Ok(0)
    );
}

// ---------------------------------------------------------------- sample extract

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn sample_extract_is_the_constant_coefficient(seed in any::<[u8; 32]>(), k in 1usize..=3) {
        let n = 64;
        let mut rng = Csprng::from_seed(seed);
        let key = GlweSecretKey::generate(GlweDimension(k), PolynomialSize(n), &mut rng).unwrap();
        let plaintext: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        let ct = key.encrypt(&plaintext, NoiseDistribution::TUniform { bound_log2: 20 }, &mut rng).unwrap();
        let phase = key.phase(&ct).unwrap();
        let lwe = sample_extract(&ct);
        prop_assert_eq!(lwe.dimension(), LweDimension(k * n));
        prop_assert_eq!(lwe_phase(key.as_slice(), &lwe).unwrap(), phase[0]);
        // Mask by hand: a[jN] = A_j[0], a[jN + t] = -A_j[N - t].
        for j in 0..k {
            let a = ct.polynomial(j).unwrap();
            prop_assert_eq!(lwe.mask()[j * n], a[0]);
            for t in 1..n {
                prop_assert_eq!(lwe.mask()[j * n + t], a[n - t].wrapping_neg());
            }
        }
        prop_assert_eq!(lwe.body(), ct.body()[0]);
    }
}

#[test]
fn glwe_container_errors() {
    assert!(GlweCiphertext::from_vec(vec![0; 10], GlweDimension(1), PolynomialSize(4)).is_err());
    assert!(GlweCiphertext::from_vec(vec![], GlweDimension(0), PolynomialSize(4)).is_err());
    let ct = GlweCiphertext::trivial(&[1, 2, 3, 4], GlweDimension(2)).unwrap();
    assert_eq!(ct.as_slice(), &[0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]);
    assert!(LweCiphertext::from_vec(vec![1]).is_err());
    let key = GlweSecretKey::generate(
        GlweDimension(1),
        PolynomialSize(8),
        &mut Csprng::from_seed([0; 32]),
    )
    .unwrap();
    assert!(key.phase(&ct).is_err());
}

/// Raw containers whose dimensions multiply past `usize` (or past what can be allocated) are
/// errors, never a panic or an abort.
#[test]
fn raw_containers_with_overflowing_dimensions_are_errors() {
    let overflow =
        |r: Result<(), Error>| assert!(matches!(r, Err(Error::SizeOverflow { .. })), "{r:?}");
    for k in [usize::MAX, usize::MAX / 2, 1 << 62] {
        overflow(
            GlweCiphertext::from_vec(vec![0; 4], GlweDimension(k), PolynomialSize(4)).map(drop),
        );
        overflow(GlweCiphertext::trivial(&[1, 2, 3, 4], GlweDimension(k)).map(drop));
        overflow(
            fhe_pbs::BootstrapKey::from_vec(
                vec![0; 8],
                LweDimension(2),
                GlweDimension(k),
                PolynomialSize(2),
                decomp(4, 1),
            )
            .map(drop),
        );
    }
    // (k + 1) N fits a usize but not memory: refused, not an abort.
    overflow(GlweCiphertext::trivial(&[7], GlweDimension(usize::MAX / 16)).map(drop));
    for (input, output) in [(usize::MAX, 1), (1, usize::MAX), (1 << 40, 1 << 40)] {
        overflow(
            KeyswitchKey::from_vec(
                vec![0; 3],
                LweDimension(input),
                LweDimension(output),
                decomp(4, 4),
            )
            .map(drop),
        );
    }
    overflow(
        fhe_pbs::BootstrapKey::from_vec(
            vec![0; 8],
            LweDimension(usize::MAX),
            GlweDimension(1),
            PolynomialSize(1 << 20),
            decomp(23, 1),
        )
        .map(drop),
    );
}

// ---------------------------------------------------------------- key switch

#[test]
fn keyswitch_is_exact_with_a_noiseless_key_and_decrypts_with_noise() {
    let mut rng = Csprng::from_seed([5; 32]);
    let big = GlweSecretKey::generate(GlweDimension(2), PolynomialSize(64), &mut rng).unwrap();
    let small = LweSecretKey::generate(LweDimension(40), &mut rng).unwrap();
    let params = decomp(4, 4);
    let noiseless = NoiseDistribution::Gaussian { std: 0.0 };
    let ksk = KeyswitchKey::generate(big.as_slice(), &small, params, noiseless, &mut rng).unwrap();
    assert_eq!(ksk.as_slice().len(), 128 * 4 * 41);
    for _ in 0..20 {
        let ct = big
            .to_lwe_key()
            .encrypt(rng.next_u64(), noiseless, &mut rng)
            .unwrap();
        let out = keyswitch(&ksk, &ct).unwrap();
        // Phase after the switch: b - sum_i round(a_i) s_i, exactly.
        let expected = big
            .as_slice()
            .iter()
            .zip(ct.mask())
            .fold(ct.body(), |acc, (&s, &a)| {
                acc.wrapping_sub(closest_representable(a, params).wrapping_mul(s))
            });
        assert_eq!(small.phase(&out).unwrap(), expected);
    }

    // With noise: messages survive.
    let noise = NoiseDistribution::Gaussian {
        std: 2f64.powi(-30),
    };
    let ksk = KeyswitchKey::generate(big.as_slice(), &small, params, noise, &mut rng).unwrap();
    assert!(
        ksk.noise_of(big.as_slice(), &small, 3, 2)
            .unwrap()
            .unsigned_abs()
            < 1 << 40
    );
    assert!(ksk.noise_of(big.as_slice(), &small, 128, 0).is_err());
    for m in 0..16u64 {
        let ct = big
            .to_lwe_key()
            .encrypt(encode(m, 16).unwrap(), noise, &mut rng)
            .unwrap();
        let out = keyswitch(&ksk, &ct).unwrap();
        assert_eq!(decode(small.phase(&out).unwrap(), 16).unwrap(), m);
    }
    let wrong = LweCiphertext::trivial(0, LweDimension(40)).unwrap();
    assert!(matches!(
        keyswitch(&ksk, &wrong),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(KeyswitchKey::from_vec(vec![0; 10], LweDimension(2), LweDimension(4), params).is_err());
}

// ---------------------------------------------------------------- lookup tables

#[test]
fn lut_layout_matches_the_closed_form() {
    // N = 64, p = 4: boxes of 16, half box 8.
    let values = [2u64, 3, 0, 1];
    let lut = lut_polynomial(PolynomialSize(64), 4, &values).unwrap();
    let delta = 1u64 << 61;
    for (t, &c) in lut.iter().enumerate() {
        let expected = if t < 56 {
            values[(t + 8) / 16] * delta
        } else {
            (values[0] * delta).wrapping_neg()
        };
        assert_eq!(c, expected, "coefficient {t}");
    }
    // Box size 1 (p = N): no rotation.
    let identity: Vec<u64> = (0..512).collect();
    let lut = lut_polynomial(PolynomialSize(512), 512, &identity).unwrap();
    assert!(
        lut.iter()
            .enumerate()
            .all(|(t, &c)| c == t as u64 * ((1u64 << 63) / 512))
    );
}

#[test]
fn lut_rotation_reads_f_of_the_rounded_phase() {
    // Coefficient 0 of X^{-rho} LUT decodes to f(round(rho / box)) for rho in [0, N), and to
    // f(0) just below 2N (a slightly negative phase).
    let (n, p) = (256usize, 16u64);
    let values: Vec<u64> = (0..p).map(|m| (7 * m + 3) % p).collect();
    let lut = lut_polynomial(PolynomialSize(n), p, &values).unwrap();
    let box_size = n / p as usize;
    let mut rotated = vec![0u64; n];
    for rho in 0..2 * n {
        multiply_by_monomial(&mut rotated, &lut, 2 * n - rho).unwrap();
        let m = (rho + box_size / 2) / box_size;
        let expected = if rho < n - box_size / 2 {
            Some(values[m])
        } else if rho >= 2 * n - box_size / 2 {
            Some(values[0])
        } else {
            None // the padding half
        };
        if let Some(e) = expected {
            assert_eq!(decode(rotated[0], p).unwrap(), e, "rho = {rho}");
        }
    }
}

#[test]
fn lut_errors() {
    assert!(matches!(
        lut_polynomial(PolynomialSize(64), 4, &[0, 1, 4, 0]),
        Err(Error::LutOutputOutOfRange {
            input: 2,
            output: 4,
            modulus: 4
        })
    ));
    assert!(lut_polynomial(PolynomialSize(64), 4, &[0, 1, 2]).is_err());
    assert!(lut_polynomial(PolynomialSize(64), 128, &[0; 128]).is_err());
    assert!(lut_polynomial(PolynomialSize(60), 4, &[0; 4]).is_err());
}

// ---------------------------------------------------------------- polynomials and FFT

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn karatsuba_equals_schoolbook(seed in any::<[u8; 32]>(), log_n in 0u32..=9) {
        let n = 1usize << log_n;
        let mut rng = Csprng::from_seed(seed);
        let a: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        let b: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        let mut fast = vec![0; n];
        let mut slow = vec![0; n];
        negacyclic_mul(&mut fast, &a, &b).unwrap();
        negacyclic_mul_schoolbook(&mut slow, &a, &b).unwrap();
        prop_assert_eq!(fast, slow);
    }

    #[test]
    fn fft_product_is_exact_for_small_operands(seed in any::<[u8; 32]>(), log_n in 1u32..=11) {
        // Digits up to 2^10 times values up to 2^20: products below 2^41, exact after rounding.
        let n = 1usize << log_n;
        let mut rng = Csprng::from_seed(seed);
        let a: Vec<u64> = (0..n).map(|_| ((rng.next_u64() % 2048) as i64 - 1024) as u64).collect();
        let b: Vec<u64> = (0..n).map(|_| ((rng.next_u64() >> 44) as i64 - (1 << 19)) as u64).collect();
        let fft = NegacyclicFft::new(PolynomialSize(n)).unwrap();
        let mut exact = vec![0; n];
        negacyclic_mul(&mut exact, &a, &b).unwrap();
        prop_assert_eq!(fft.negacyclic_mul(&a, &b).unwrap(), exact);
    }
}

#[test]
fn fft_error_on_full_size_operands_is_small() {
    // Balanced 23-bit digits times uniform 64-bit coefficients, N = 2048: the f64 error stays
    // around 2^40 (the rounding of products near 2^90).
    let n = 2048;
    let mut rng = Csprng::from_seed([11; 32]);
    let a: Vec<u64> = (0..n)
        .map(|_| ((rng.next_u64() >> 41) as i64 - (1 << 22)) as u64)
        .collect();
    let b: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    let fft = NegacyclicFft::new(PolynomialSize(n)).unwrap();
    let mut exact = vec![0; n];
    negacyclic_mul(&mut exact, &a, &b).unwrap();
    let approx = fft.negacyclic_mul(&a, &b).unwrap();
    let max = exact
        .iter()
        .zip(&approx)
        .map(|(&x, &y)| (x.wrapping_sub(y) as i64).unsigned_abs())
        .max()
        .unwrap();
    println!(
        "FFT product, N = 2048, 23-bit digits x 64-bit values: max error 2^{:.1}",
        (max as f64).log2()
    );
    assert!(max < 1 << 44, "max error 2^{:.1}", (max as f64).log2());
    assert!(NegacyclicFft::new(PolynomialSize(6)).is_err());
    assert!(fft.negacyclic_mul(&a[..4], &b[..4]).is_err());
}

// ---------------------------------------------------------------- bootstrap key layout

#[test]
fn bootstrap_key_rows_decrypt_to_the_gadget_and_replay_from_randomness() {
    use fhe_pbs::BootstrapKey;
    use fhe_pbs::bootstrap_key::encrypt_ggsw_with_randomness;

    let (n, k, big_n) = (3usize, 2usize, 16usize);
    let params = decomp(10, 3);
    let noise = NoiseDistribution::TUniform { bound_log2: 5 };
    let mut rng = Csprng::from_seed([21; 32]);
    let small = LweSecretKey::from_bits(vec![1, 0, 1]).unwrap();
    let glwe = GlweSecretKey::generate(GlweDimension(k), PolynomialSize(big_n), &mut rng).unwrap();
    let replay_start = rng.clone();
    let bsk = BootstrapKey::generate(&small, &glwe, params, noise, &mut rng).unwrap();
    assert_eq!(bsk.as_slice().len(), n * 3 * (k + 1) * (k + 1) * big_n);
    assert_eq!(bsk.ggsw_len(), 3 * (k + 1) * (k + 1) * big_n);
    assert!(bsk.ggsw(n).is_err());

    let mut replay = replay_start;
    let row_len = (k + 1) * big_n;
    for i in 0..n {
        let ggsw = bsk.ggsw(i).unwrap();
        // Row (level matrix m, r), level j = 3 - m (least significant first, as tfhe-rs):
        // phase = s_i 2^(64 - 10 j) times -S_r (r < k) or 1 (r = k).
        for (row_index, row) in ggsw.chunks_exact(row_len).enumerate() {
            let (j, r) = (3 - row_index / (k + 1), row_index % (k + 1));
            let ct =
                GlweCiphertext::from_vec(row.to_vec(), GlweDimension(k), PolynomialSize(big_n))
                    .unwrap();
            let phase = glwe.phase(&ct).unwrap();
            let factor = small.as_slice()[i] << (64 - 10 * j);
            for (t, &coefficient) in phase.iter().enumerate() {
                let message = if r < k {
                    factor
                        .wrapping_mul(glwe.as_slice()[r * big_n + t])
                        .wrapping_neg()
                } else if t == 0 {
                    factor
                } else {
                    0
                };
                let e = coefficient.wrapping_sub(message) as i64;
                assert!(
                    e.abs() <= 32,
                    "GGSW {i} row {row_index} coefficient {t}: noise {e}"
                );
            }
        }
        // The same words from the same randomness: masks then noise, row by row.
        let mut masks = Vec::new();
        let mut noises = Vec::new();
        for _ in 0..3 * (k + 1) {
            let mut mask = vec![0u64; k * big_n];
            replay.fill_uniform(&mut mask);
            let mut e = vec![0u64; big_n];
            replay.fill_noise(&mut e, noise).unwrap();
            masks.extend(mask);
            noises.extend(e);
        }
        let again = encrypt_ggsw_with_randomness(
            glwe.as_slice(),
            PolynomialSize(big_n),
            small.as_slice()[i],
            params,
            &masks,
            &noises,
        )
        .unwrap();
        assert_eq!(again, ggsw);
    }
    assert!(
        encrypt_ggsw_with_randomness(glwe.as_slice(), PolynomialSize(big_n), 1, params, &[], &[])
            .is_err()
    );
    assert!(LweSecretKey::from_bits(vec![0, 2]).is_err());
    assert!(
        BootstrapKey::from_vec(
            vec![0; 5],
            LweDimension(1),
            GlweDimension(1),
            PolynomialSize(4),
            params
        )
        .is_err()
    );
}

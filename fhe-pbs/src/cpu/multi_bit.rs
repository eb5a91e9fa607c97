//! The CPU multi-bit blind rotation (see [`super::Cpu`]'s algorithm notes).

use rustfft::num_complex::Complex64;

use super::{FftBuffers, Rotation, external_product_exact, external_product_fft};
use crate::fft::{NegacyclicFft, ggsw_to_fourier};
use crate::modswitch::{modulus_switch_unchecked, multi_bit_degrees_unchecked};
use crate::multi_bit_key::MultiBitBootstrapKey;
use crate::params::Parameters;
use crate::polynomial::add_monomial_product_unchecked;

/// `bundle = sum_t X^{degrees[t]} group[t]`, polynomial by polynomial, exactly (`group` holds
/// the `2^g` GGSWs of one group, `degrees[0] = 0`). (A prefetch of the next group's GGSWs as the
/// sums go, as the classic rotation does for its next GGSW, made one multi-bit PBS slower on a
/// 2-core AMD EPYC VM: 25.0-25.9 against 23.1-23.9 ms; a group is 1 MB at g = 4.)
#[inline(always)]
pub(crate) fn key_bundle(bundle: &mut [u64], group: &[u64], degrees: &[usize], n: usize) {
    let ggsw_len = bundle.len();
    bundle.copy_from_slice(&group[..ggsw_len]);
    for (ggsw, &degree) in group.chunks_exact(ggsw_len).zip(degrees).skip(1) {
        for (out, poly) in bundle.chunks_exact_mut(n).zip(ggsw.chunks_exact(n)) {
            add_monomial_product_unchecked(out, poly, degree);
        }
    }
}

/// The multi-bit blind rotation of the LWE ciphertext `words` (mask then body, `n + 1` words,
/// checked by the caller), returning the accumulator words. With `fft`, each bundle is
/// transformed and the products are f64 FFT products; without, they are exact.
#[inline(always)]
pub(crate) fn blind_rotate(
    params: &Parameters,
    key: &MultiBitBootstrapKey,
    words: &[u64],
    lut: &[u64],
    log2_2n: u32,
    fft: Option<&NegacyclicFft>,
) -> Vec<u64> {
    let n = params.polynomial_size().0;
    let (mask, body) = match words.split_last() {
        Some((&body, mask)) => (mask, body),
        None => (words, 0),
    };
    let switched_body = [modulus_switch_unchecked(body, log2_2n)];
    let mut rotation = Rotation::start(params, &switched_body, lut);
    let (k1, rows, levels) = (rotation.k1, rotation.rows, rotation.levels);
    let g = key.grouping_factor().0;
    let ggsw_len = key.ggsw_len();
    let mut degrees = vec![0usize; key.grouping_factor().ggsw_per_group()];
    let mut bundle = vec![0u64; ggsw_len];
    let mut signed_digits = vec![0i64; rows * n];
    let mut next = vec![0u64; k1 * n];
    let mut exact_digits = vec![0u64; rows * n];
    let mut fourier = fft.map(|fft| {
        (
            vec![Complex64::default(); ggsw_len / 2],
            vec![Complex64::default(); rows * n / 2],
            FftBuffers::new(fft),
        )
    });
    let groups = key.as_slice().chunks_exact(degrees.len() * ggsw_len);
    for (group_mask, group) in mask.chunks_exact(g).zip(groups) {
        multi_bit_degrees_unchecked(group_mask, log2_2n, &mut degrees);
        key_bundle(&mut bundle, group, &degrees, n);
        rotation.decompose_accumulator(&mut signed_digits);
        next.fill(0);
        match (fft, fourier.as_mut()) {
            (Some(fft), Some((bundle_f, digits_f, buffers))) => {
                let level_polys = rows / levels * k1;
                ggsw_to_fourier(fft, &bundle, bundle_f, level_polys, &mut buffers.scratch);
                buffers.forward_digits(fft, &signed_digits, digits_f);
                external_product_fft(&mut next, digits_f, bundle_f, &[], fft, buffers);
            }
            _ => {
                for (u, &d) in exact_digits.iter_mut().zip(&signed_digits) {
                    *u = d as u64;
                }
                external_product_exact(&mut next, &exact_digits, &bundle, n, k1);
            }
        }
        std::mem::swap(&mut rotation.acc, &mut next);
    }
    rotation.acc
}

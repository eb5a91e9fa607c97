//! The multi-bit bootstrap on the device (low-latency engine): the key bundles of every group
//! of every ciphertext built at once, off the serial chain (`fhe_multi_bit_bundles`), then
//! the cluster kernel's `n / g` external products with them
//! (`fhe_blind_rotate_cluster_multi_bit`).
//!
//! A bundle is built in the Fourier domain: the forward transform evaluates a polynomial at
//! `N/2` roots `zeta_q` of `X^N + 1`, so the transform of `X^d GGSW_t` is `zeta_q^d` times
//! the transform of `GGSW_t`, and `zeta_q = exp(i pi r_q / N)` for an odd `r_q` that
//! [`monomial_roots`] reads off the transform of `X`. The kernel takes `zeta_q^d =
//! exp(i pi a / N)`, `a = r_q d mod 2N`, from a table of the first quadrant, each entry
//! computed directly (no powers of rounded values), turned by `i^(a / (N/2))` (exact swaps and
//! sign changes, in shared memory: the kernel's `monomial_value`).

use super::*;
use crate::fft::NegacyclicFft;
use crate::multi_bit_key::MultiBitBootstrapKey;
use crate::params::PolynomialSize;
use blind_rotation::{CLUSTER_LOG_E, key_position};
use rustfft::num_complex::Complex64;

/// Threads per block of `fhe_multi_bit_bundles` (at most: the block size divides `N/2`).
const BUNDLE_THREADS: usize = 128;

/// Tiles of ciphertexts each block of `fhe_multi_bit_bundles` takes, one after the other: the
/// block copies the monomial table into its shared memory once for them all. (A resident
/// multi-bit batch of 4,096 on an H200: 76.5 ms at 1, 74.1 ms at 4, 74.0 ms at 16; of 256:
/// 4.78 ms at 4, 5.04 ms at 16.)
const BUNDLE_TILES_PER_BLOCK: usize = 4;

/// Ciphertexts one thread of `fhe_multi_bit_bundles` takes at a time for a GGSW of `polys`
/// polynomials (`FHE_BUNDLE_TILE`): the launch gives each block about
/// [`BUNDLE_TILES_PER_BLOCK`] such tiles. Only the speed depends on it: the kernel covers
/// every ciphertext whatever the grid.
fn bundle_tile(polys: usize) -> usize {
    (16 / polys).max(1)
}

/// The multi-bit kernels.
#[derive(Debug, Clone)]
pub(super) struct MultiBitKernels {
    /// `fhe_multi_bit_bundles_*`.
    bundles: Kernel,
    /// `fhe_blind_rotate_cluster_multi_bit_*`.
    rotate: Kernel,
    /// `g`.
    grouping: usize,
}

impl MultiBitKernels {
    /// Loads both kernels of `module` (the caller checked that clusters are available).
    pub(super) fn load(
        gpu: &Gpu,
        module: &Module,
        suffix: &str,
        params: &Parameters,
        grouping: usize,
    ) -> Result<Self, Error> {
        let rotate = gpu.kernel(
            module,
            &format!("fhe_blind_rotate_cluster_multi_bit_{suffix}"),
        )?;
        allow_shared(
            &rotate,
            cluster_shared_bytes(params),
            "multi-bit blind rotation (one cluster block)",
        )?;
        let bundles = gpu.kernel(module, &format!("fhe_multi_bit_bundles_{suffix}"))?;
        allow_shared(
            &bundles,
            bundles_shared_bytes(params),
            "multi-bit key bundles' monomial table",
        )?;
        Ok(Self {
            bundles,
            rotate,
            grouping,
        })
    }
}

/// Dynamic shared memory of a block of `fhe_multi_bit_bundles`: the [`monomial_quadrant`]
/// table, `N/2` complex values.
fn bundles_shared_bytes(params: &Parameters) -> usize {
    16 * (params.polynomial_size().0 / 2)
}

/// The tables of the bundles kernel, resident with the key.
#[derive(Debug)]
pub(super) struct MultiBitTables {
    /// [`monomial_roots`].
    roots: DeviceBuffer<u32>,
    /// [`monomial_quadrant`].
    quadrant: DeviceBuffer<f64>,
}

impl MultiBitTables {
    /// Both tables for `polynomial_size`, uploaded.
    pub(super) fn upload(gpu: &Gpu, polynomial_size: PolynomialSize) -> Result<Self, Error> {
        Ok(Self {
            roots: gpu.upload(&monomial_roots(polynomial_size)?)?,
            quadrant: gpu.upload(&monomial_quadrant(polynomial_size))?,
        })
    }
}

/// `exp(i pi a / N)` for `a < N/2`, as `(re, im)` pairs: the first quadrant, from which
/// the bundles kernel turns every `a < 2N`.
pub(super) fn monomial_quadrant(polynomial_size: PolynomialSize) -> Vec<f64> {
    let n = polynomial_size.0;
    (0..n / 2)
        .flat_map(|a| {
            let (sine, cosine) = (std::f64::consts::PI * a as f64 / n as f64).sin_cos();
            [cosine, sine]
        })
        .collect()
}

/// `exp(i pi a / N)` for `a < 2N` from [`monomial_quadrant`]'s table of `N/2` pairs: the
/// value of `X^d` at a root `exp(i pi r / N)` is `monomial_value(quadrant, r d mod 2N)`.
/// `i^(a / (N/2))` times entry `a mod N/2`, as `fhe_multi_bit_bundles` computes it.
#[cfg(test)]
fn monomial_value(quadrant: &[f64], a: usize) -> Complex64 {
    let quarter = quadrant.len() / 2;
    let entry = a % quarter;
    let v = Complex64::new(quadrant[2 * entry], quadrant[2 * entry + 1]);
    let w = if (a / quarter) & 1 == 1 {
        Complex64::new(-v.im, v.re)
    } else {
        v
    };
    if (a / quarter) & 2 == 2 { -w } else { w }
}

/// `r_q` for each stored position `q < N/2` of a device-layout polynomial: the transform of
/// `X` at the position's root is `exp(i pi r_q / N)`.
///
/// # Errors
///
/// As [`NegacyclicFft::new`].
pub(super) fn monomial_roots(polynomial_size: PolynomialSize) -> Result<Vec<u32>, Error> {
    let n = polynomial_size.0;
    let half = n / 2;
    let fft = NegacyclicFft::new(polynomial_size)?;
    let mut x = vec![0u64; n];
    x[1] = 1;
    let mut transform = vec![Complex64::default(); half];
    fft.forward_u64(&x, &mut transform, &mut fft.make_scratch());
    let log = half.trailing_zeros();
    Ok((0..half)
        .map(|stored| {
            let source = key_position(stored).reverse_bits() >> (usize::BITS - log);
            let turns = transform[source].arg() / std::f64::consts::PI * n as f64;
            (turns.round() as i64).rem_euclid(2 * n as i64) as u32
        })
        .collect())
}

/// The multi-bit key in the device layout of a classic key (its GGSW list transformed).
pub(super) fn device_multi_bit_key(
    key: &MultiBitBootstrapKey,
    params: &Parameters,
) -> Result<Vec<f64>, Error> {
    let k1 = params.glwe_dimension().0 + 1;
    let levels = params.pbs_decomposition().level_count().0;
    let fourier = FourierBootstrapKey::new(key.ggsw_list())?;
    Ok(device_key(
        &fourier,
        params.polynomial_size().0 / 2,
        k1 * levels,
        k1,
    ))
}

impl Cuda {
    /// The multi-bit blind rotation of `count` ciphertexts (`small`, switched as they are
    /// read): bundles, then the cluster kernel; as [`Cuda::blind_rotate_device`].
    pub(super) fn multi_bit_rotate_device(
        &self,
        mut small: Words<'_>,
        lut: Words<'_>,
        count: usize,
        output: Output<'_>,
        extract: bool,
    ) -> Result<Option<DeviceBuffer<u64>>, Error> {
        let (Some(kernels), Some(tables)) = (&self.kernels.multi_bit, &self.keys.multi_bit) else {
            return Err(Error::InvalidParameter {
                name: "bootstrap key",
                reason: "this backend holds no multi-bit key".into(),
            });
        };
        let k1 = self.params.glwe_dimension().0 + 1;
        let n = self.params.polynomial_size().0;
        let levels = self.params.pbs_decomposition().level_count().0;
        let groups = self.params.lwe_dimension().0 / kernels.grouping;
        let ggsw_len = k1 * k1 * levels * n / 2;
        let total = count * groups * ggsw_len;
        let shape = shape_of(&self.params);
        // SAFETY: the bundles kernel writes every value.
        let mut bundles = unsafe { self.gpu.alloc_uninit::<f64>(2 * total)? };
        // Powers of two: the block size divides N/2 (at least 256).
        let threads = BUNDLE_THREADS.min(n / 2);
        let tiles = count.div_ceil(bundle_tile(k1 * k1 * levels) * BUNDLE_TILES_PER_BLOCK);
        let grid = Grid {
            blocks: to_u32(tiles * groups * (n / 2 / threads)),
            threads: to_u32(threads),
            shared_bytes: to_u32(bundles_shared_bytes(&self.params)),
        };
        let (grouping, groups_u32, count_u32, tiles_u32) = (
            to_u32(kernels.grouping),
            to_u32(groups),
            to_u32(count),
            to_u32(tiles),
        );
        // SAFETY: the arguments match `fhe_multi_bit_bundles_*(FheShape, const u64* small,
        // const double2* key, const u32* roots, const double2* quadrant, u32 grouping,
        // u32 groups, u32 count, u32 tiles, double2* bundles)`: `small` holds count (n + 1)
        // words, the key n / g 2^g GGSWs of ggsw_len complex values, `roots` N/2 words,
        // `quadrant` N/2 complex values, `bundles` count groups ggsw_len; the grid has
        // `tiles` blocks for each block of N/2 positions of each group, the block size
        // dividing N/2, and the shared memory the table needs.
        unsafe {
            let launch = small
                .reborrow()
                .pass(self.gpu.launch(&kernels.bundles, grid).value(&shape));
            launch
                .buffer(&self.keys.bsk)
                .buffer(&tables.roots)
                .buffer(&tables.quadrant)
                .value(&grouping)
                .value(&groups_u32)
                .value(&count_u32)
                .value(&tiles_u32)
                .buffer_mut(&mut bundles)
                .run()?;
        }
        let width = if extract { (k1 - 1) * n + 1 } else { k1 * n };
        // SAFETY: the cluster kernel writes every word of every output.
        let mut out = unsafe { output.allocate(&self.gpu, count * width)? };
        let extract = u32::from(extract);
        let grid = Grid {
            blocks: to_u32(count * k1),
            threads: to_u32(n / 2) >> CLUSTER_LOG_E,
            shared_bytes: to_u32(cluster_shared_bytes(&self.params)),
        };
        // SAFETY: as for the classic cluster kernel (`blind_rotate_device`), with
        // `fhe_blind_rotate_cluster_multi_bit_*`, whose key is `bundles` (groups GGSWs per
        // ciphertext, built above for these `count` ciphertexts) and whose last parameter is
        // the u32 `groups`.
        unsafe {
            let launch = small.pass(self.gpu.launch(&kernels.rotate, grid).value(&shape));
            let launch = lut
                .pass(launch)
                .buffer(&bundles)
                .buffer(&self.keys.twist)
                .buffer(&self.keys.twiddles_staged);
            out.pass(launch).value(&extract).value(&groups_u32).run()?;
        }
        Ok(out.into_device())
    }

    /// Bytes of key bundles per ciphertext of a multi-bit set (0 for a classic one).
    pub(super) fn bundle_bytes_per_ciphertext(&self) -> usize {
        match self.params.pbs_kind() {
            crate::PbsKind::Classic => 0,
            crate::PbsKind::MultiBit(g) => {
                let k1 = self.params.glwe_dimension().0 + 1;
                let levels = self.params.pbs_decomposition().level_count().0;
                let groups = self.params.lwe_dimension().0 / g.0;
                16 * groups * k1 * k1 * levels * self.params.polynomial_size().0 / 2
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quadrant turned gives `exp(i pi a / N)` for every `a < 2N`.
    #[test]
    fn the_quadrant_turned_gives_every_monomial() {
        for log in [9, 11, 13] {
            let n = 1usize << log;
            let quadrant = monomial_quadrant(PolynomialSize(n));
            assert_eq!(quadrant.len(), n);
            for a in 0..2 * n {
                let angle = std::f64::consts::PI * a as f64 / n as f64;
                let expected = Complex64::new(angle.cos(), angle.sin());
                let got = monomial_value(&quadrant, a);
                assert!((got - expected).norm() < 1e-15, "N = {n}, a = {a}");
            }
        }
    }

    /// The transform of `X^d` is the roots' `d`-th powers, as the table gives them, for every
    /// position and `N`.
    #[test]
    fn monomials_transform_to_powers_of_the_roots() {
        for log in 9..=13 {
            let n = 1usize << log;
            let roots = monomial_roots(PolynomialSize(n)).unwrap_or_default();
            assert_eq!(roots.len(), n / 2);
            let quadrant = monomial_quadrant(PolynomialSize(n));
            let fft = NegacyclicFft::new(PolynomialSize(n)).unwrap_or_else(|_| unreachable!());
            for d in [0usize, 1, 2, 3, n - 1, n, n + 5, 2 * n - 1] {
                let mut monomial = vec![0u64; n];
                if d < n {
                    monomial[d] = 1;
                } else {
                    monomial[d - n] = u64::MAX; // X^d = -X^(d - N)
                }
                let mut transform = vec![Complex64::default(); n / 2];
                fft.forward_u64(&monomial, &mut transform, &mut fft.make_scratch());
                let log_half = (n / 2).trailing_zeros();
                for (stored, &r) in roots.iter().enumerate() {
                    assert_eq!(r % 2, 1, "odd roots");
                    let source = key_position(stored).reverse_bits() >> (usize::BITS - log_half);
                    let a = (r as usize * d) % (2 * n);
                    let expected = monomial_value(&quadrant, a);
                    assert!(
                        (transform[source] - expected).norm() < 1e-9,
                        "N = {n}, d = {d}"
                    );
                }
            }
        }
    }
}

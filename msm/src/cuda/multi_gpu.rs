//! MSMs spread over several GPUs of one host: each GPU holds a consecutive part of the bases
//! and sums its part of every MSM; the host adds the parts.

use std::ops::Range;
use std::sync::Arc;

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ff::Zero;
use kernels::{Gpu, even_parts, on_each};

use super::{ContextOptions, Cuda, MsmContext};
use crate::error::Error;
use crate::{MsmBackend, MsmCurve, check_batch, check_lengths};

/// A backend over several GPUs of one host (a [`Cuda`] on each).
///
/// How the work is split: the `n` bases go to the GPUs in consecutive parts of nearly equal
/// size ([`kernels::even_parts`]: with `g` GPUs, the first `n % g` take `n / g + 1` points,
/// the others `n / g`; fewer points than GPUs leave some idle). Each GPU sums its part of
/// every MSM, all GPUs at once (a host thread each), and the host adds the parts. So one
/// large MSM runs on every GPU, each holding only its part of the bases (and of their
/// shifted copies), and the sums equal one GPU's (the group law is exact).
///
/// ```no_run
/// use ark_ec::{CurveGroup, PrimeGroup};
/// use msm::{ContextOptions, MultiGpu};
///
/// # fn main() -> Result<(), msm::Error> {
/// let g = ark_bls12_381::G1Projective::generator();
/// let bases = vec![g.into_affine(); 1 << 16];
/// let scalars = vec![msm::Fr::from(3u64); 1 << 16];
/// let gpus = MultiGpu::new()?; // every GPU of the host
/// let context = gpus.context(&bases, ContextOptions::default())?;
/// assert_eq!(context.msm(&scalars)?, g * msm::Fr::from(3u64 << 16));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MultiGpu {
    backends: Vec<Cuda>,
}

impl MultiGpu {
    /// The backend on every visible GPU.
    ///
    /// # Errors
    ///
    /// As [`Cuda::new`] on any of the GPUs.
    pub fn new() -> Result<Self, Error> {
        Self::on(&Gpu::all()?)
    }

    /// As [`MultiGpu::new`], on GPU handles the caller opened (a GPU given twice takes two
    /// parts of the bases).
    ///
    /// # Errors
    ///
    /// [`Error::Empty`] for an empty list; as [`Cuda::on`] on any of the GPUs.
    pub fn on(gpus: &[Arc<Gpu>]) -> Result<Self, Error> {
        if gpus.is_empty() {
            return Err(Error::Empty);
        }
        let backends = on_each(gpus, |gpu| Cuda::on(Arc::clone(gpu)))
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { backends })
    }

    /// The backend of each GPU, in the order they take the parts of the bases.
    pub fn backends(&self) -> &[Cuda] {
        &self.backends
    }

    /// The consecutive ranges of `points` bases that the GPUs take, in the order of
    /// [`MultiGpu::backends`]; GPUs left without points have no range.
    pub fn parts(&self, points: usize) -> Vec<Range<usize>> {
        even_parts(points, self.backends.len())
    }

    /// Uploads each GPU's part of `bases` (and computes its shifted copies if asked, all GPUs
    /// at once) for many MSMs. Each part picks its own window when `options` names none.
    ///
    /// # Errors
    ///
    /// As [`Cuda::context`] on any of the GPUs: [`Error::Empty`] for no bases,
    /// [`Error::BasesTooLarge`] when a part does not fit on its GPU.
    pub fn context<C: MsmCurve>(
        &self,
        bases: &[Affine<C>],
        options: ContextOptions,
    ) -> Result<MultiGpuContext<C>, Error> {
        if bases.is_empty() {
            return Err(Error::Empty);
        }
        let work: Vec<(&Cuda, Range<usize>)> =
            self.backends.iter().zip(self.parts(bases.len())).collect();
        let parts = on_each(&work, |(cuda, range)| {
            let context = cuda.context(&bases[range.clone()], options)?;
            Ok((range.clone(), context))
        })
        .into_iter()
        .collect::<Result<Vec<_>, Error>>()?;
        Ok(MultiGpuContext {
            parts,
            points: bases.len(),
        })
    }
}

/// The sums of `sums(part)` for every part, set by set: the MSMs of each set over all parts.
fn add_parts<C: MsmCurve, P: Sync>(
    parts: &[P],
    sets: usize,
    sums: impl Fn(&P) -> Result<Vec<Projective<C>>, Error> + Sync,
) -> Result<Vec<Projective<C>>, Error> {
    let mut totals = vec![Projective::<C>::zero(); sets];
    for part in on_each(parts, sums) {
        for (total, sum) in totals.iter_mut().zip(part?) {
            *total += sum;
        }
    }
    Ok(totals)
}

impl<C: MsmCurve> MsmBackend<C> for MultiGpu {
    /// "N GPUs: " and each GPU's backend name.
    fn name(&self) -> String {
        let names: Vec<String> = self.backends.iter().map(Cuda::name).collect();
        format!("{} GPUs: {}", self.backends.len(), names.join("; "))
    }

    fn msm(&self, bases: &[Affine<C>], scalars: &[C::ScalarField]) -> Result<Projective<C>, Error> {
        check_lengths(bases.len(), scalars.len())?;
        Ok(self.msm_batch(bases, &[scalars])?[0])
    }

    /// Each GPU uploads its part of the bases once for the whole batch (as
    /// [`Cuda`]'s `msm_batch`, in chunks when it does not fit).
    fn msm_batch(
        &self,
        bases: &[Affine<C>],
        scalar_sets: &[&[C::ScalarField]],
    ) -> Result<Vec<Projective<C>>, Error> {
        check_batch(bases.len(), scalar_sets)?;
        if scalar_sets.is_empty() {
            return Ok(Vec::new());
        }
        let work: Vec<(&Cuda, Range<usize>)> =
            self.backends.iter().zip(self.parts(bases.len())).collect();
        add_parts(&work, scalar_sets.len(), |(cuda, range)| {
            let sets: Vec<&[C::ScalarField]> =
                scalar_sets.iter().map(|set| &set[range.clone()]).collect();
            cuda.msm_batch(&bases[range.clone()], &sets)
        })
    }
}

/// Bases of group `C` spread over several GPUs, each holding a consecutive part (a
/// [`MsmContext`] each), serving many MSMs over them. Made by [`MultiGpu::context`].
pub struct MultiGpuContext<C: MsmCurve = ark_bls12_381::g1::Config> {
    /// Each GPU's range of the bases and its context over them.
    parts: Vec<(Range<usize>, MsmContext<C>)>,
    points: usize,
}

impl<C: MsmCurve> std::fmt::Debug for MultiGpuContext<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiGpuContext")
            .field("points", &self.points)
            .field("parts", &self.parts)
            .finish()
    }
}

impl<C: MsmCurve> MultiGpuContext<C> {
    /// Number of bases.
    pub fn len(&self) -> usize {
        self.points
    }

    /// Whether there are no bases (never: a context holds at least one).
    pub fn is_empty(&self) -> bool {
        self.points == 0
    }

    /// Each GPU's range of the bases and its context (for scalars kept on one device, say).
    pub fn parts(&self) -> &[(Range<usize>, MsmContext<C>)] {
        &self.parts
    }

    /// `sum_i scalars[i] * bases[i]`: each GPU uploads and sums its part of the scalars, all
    /// at once.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] when `scalars` and the bases differ in length,
    /// [`Error::Gpu`] when a GPU fails.
    pub fn msm(&self, scalars: &[C::ScalarField]) -> Result<Projective<C>, Error> {
        check_lengths(self.points, scalars.len())?;
        Ok(self.msm_batch(&[scalars])?[0])
    }

    /// One MSM per scalar set over the context's bases, each GPU taking its part of every
    /// set (as [`MsmContext::msm_batch`]).
    ///
    /// # Errors
    ///
    /// [`Error::BatchLengthMismatch`] when a set's length differs from the bases', otherwise
    /// as [`MultiGpuContext::msm`].
    pub fn msm_batch(
        &self,
        scalar_sets: &[&[C::ScalarField]],
    ) -> Result<Vec<Projective<C>>, Error> {
        check_batch(self.points, scalar_sets)?;
        add_parts(&self.parts, scalar_sets.len(), |(range, context)| {
            let sets: Vec<&[C::ScalarField]> =
                scalar_sets.iter().map(|set| &set[range.clone()]).collect();
            context.msm_batch(&sets)
        })
    }
}
